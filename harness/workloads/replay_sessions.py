"""Which trace a lane plays next, and the ids a session tree's requests carry (docs/replay.md,
"Lanes" and "Requests"). The scheduler (harness.workloads.replay) asks; nothing here waits.

Upstream: SemiAnalysisAI/aiperf:src/aiperf/timing/trajectory_source.py
@996eca9d6947971cd319b0adc9914b49e33fddab (`_build_trajectories`, `next_recycle_conversation_id`:
one dataset sampler, sequential by default, gives every lane its first trace and every
recycle its next), and PyPI aiperf 0.13.0 `transports/base_transports.py` `build_headers`
with `workers/worker.py` (X-Request-ID a fresh uuid4 per request; X-Correlation-ID the
stream's session id, a uuid4 per stream, the root's shared by the tree as its
root_correlation_id, `trajectory_source._snapshot_for` and `conversation_source.start_branch_child`;
X-Session-Affinity the same value, `AIPERF_HTTP_X_SESSION_AFFINITY_FROM_CORRELATION_ID`
defaulting to true). The routing headers of `correlation_headers` (X-Session-ID,
X-SMG-Routing-Key) carry the request's X-Correlation-ID too, as AIPerf's `build_headers` adds
them when InferenceX's DP rows export their switches (harness.config.validate_scenario's
CORRELATION_HEADERS).
X-Dynamo-Session-ID in `correlation_headers` is aiperf 0.13.0's Dynamo switch: the request's
X-Correlation-ID on every request, and X-Dynamo-Parent-Session-ID, the spawning session's
X-Correlation-ID (its `parent_correlation_id`), on a sub-agent's requests only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

# X-Dynamo-Session-ID (one of harness.config.validate_scenario's CORRELATION_HEADERS) is PyPI
# aiperf 0.13.0's AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID: the request's
# X-Correlation-ID, and on a sub-agent's requests X-Dynamo-Parent-Session-ID, the id of the
# session that spawned it.
DYNAMO_SESSION_HEADER, DYNAMO_PARENT_HEADER = "X-Dynamo-Session-ID", "X-Dynamo-Parent-Session-ID"

# shared: one sequential sampler across lanes (upstream) | per_lane: a lane moves to the
# trace after its own (this harness's earlier rule)
RECYCLES = ("shared", "per_lane")
# aiperf: no temperature, chat's max_completion_tokens, session headers (upstream's agentic
# requests) | harness: temperature 0.0, max_tokens, no session headers (our earlier bodies)
REQUEST_STYLES = ("aiperf", "harness")
# stream: X-Session-Affinity is the stream's own correlation id (upstream) | tree: every stream
# of a session tree sends the root's, so a router keeps the whole tree on one engine
SESSION_AFFINITIES = ("stream", "tree")


class TraceSampler:
    """The trace index each lane plays: lanes take their first trace and every recycle its next
    from one sequential cursor (`shared`), or each lane steps through the corpus from its own
    start (`per_lane`). Both give lane i trace i mod n first."""

    def __init__(self, n_traces: int, rule: str = "shared") -> None:
        if n_traces < 1:
            raise ValueError("no traces to sample")
        self.n, self.rule = n_traces, rule
        self._cursor = 0
        self.drawn: list[int] = []  # every draw in order (initial lanes, then recycles)

    def _draw(self) -> int:
        i = self._cursor % self.n
        self._cursor += 1
        self.drawn.append(i)
        return i

    def first(self, lane: int) -> int:
        if self.rule == "shared":
            return self._draw()
        self.drawn.append(lane % self.n)
        return lane % self.n

    def recycle(self, current: int) -> int:
        if self.rule == "shared":
            return self._draw()
        nxt = (current + 1) % self.n
        self.drawn.append(nxt)
        return nxt


@dataclass
class SessionIds:
    """A session tree's correlation ids: the root stream's is the tree's; every other stream
    gets its own on first use (uuid4 strings, as upstream). A recycled tree is a new one.
    `routing`: headers that also carry the request's X-Correlation-ID (none by default)."""

    affinity: str = "stream"
    routing: tuple[str, ...] = ()
    root: str = field(default_factory=lambda: str(uuid.uuid4()))
    _streams: dict[str, str] = field(default_factory=dict)

    def of(self, stream: str) -> str:
        if not stream:
            return self.root
        cid = self._streams.get(stream)
        if cid is None:
            cid = self._streams[stream] = str(uuid.uuid4())
        return cid

    def request(self, stream: str) -> tuple[dict[str, str], dict[str, Any]]:
        """One request's headers and the tags that record them (the AIPerf export reads them)."""
        rid, cid = str(uuid.uuid4()), self.of(stream)
        # every stream but the root's is spawned by the root (replay_plan: one level of
        # sub-agents, and the root's own parallel chains)
        parent = self.root if stream else None
        headers = {"X-Request-ID": rid, "X-Correlation-ID": cid,
                   "X-Session-Affinity": self.root if self.affinity == "tree" else cid,
                   **dict.fromkeys(self.routing, cid)}
        if DYNAMO_SESSION_HEADER in self.routing and parent is not None:
            headers[DYNAMO_PARENT_HEADER] = parent
        tags = {"x_request_id": rid, "x_correlation_id": cid, "root_correlation_id": self.root,
                "parent_correlation_id": parent}
        return headers, tags
