"""Request bodies of an agentic replay: a trace request and where it sits (ReplayContext) -> the
bytes sent, with the prompt tokens the server will count.

As AgentX replays through AIPerf (docs/upstream/agentx.md §3.5, §4):
- blocks: the same hash id gives the same block bytes in every session of a trace (ids are
  local per trace; Mooncake's are global), harness.workloads.block_table;
- messages: system / user / pre-canned assistant turns rebuilt from the ids
  (harness.workloads.chat_bodies), on /v1/chat/completions by default; `/v1/completions`
  sends the same blocks as one prompt (`api: completions`);
- cache bust (`scenario.cache_bust`): `first_turn_prefix` (AIPerf's, the default) puts
  "[rid:<sha256(benchmark:recycle_pass:lane:trace)[:12]>]\\n\\n" before the first user
  message of every request of a session tree, one marker per tree shared by its sub-agents, a
  fresh one per recycled tree; sessions of a trace share the system prefix and nothing after
  it. `per_block` salts every block per session (nothing shared between sessions; this
  harness's earlier behaviour); `none` sends no marker.
Expected prompt tokens are exact: the contents hold `in` tokens, plus the marker's tokens, plus
what the chat template adds for the message roles (or the completions format's overhead).
Blocks are a point's own (the point id is part of their scope), as each AIPerf run meets a
fresh server in InferenceX.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.records import PHASE_MEASURED, RequestRecord, RequestSpec
from harness.workloads.block_table import TokenTable, scope_key
from harness.workloads.chat_bodies import (
    Segment,
    TemplateOverhead,
    body_head,
    chat_chunks,
    common_prefix,
    completion_chunks,
    covered_blocks,
    first_turn,
    first_user,
    json_string_bytes,
    structure,
)
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay_context import ReplayContext
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest
from harness.workloads.traces.stats import PrefixTrie, hit_tokens

CACHE_BUST_MODES = ("first_turn_prefix", "per_block", "none")
_MARKERS = 1 << 16  # trees whose marker is remembered (a live tree is always among them)
DEFAULT_HISTORY_BYTES = 512 << 20


@dataclass(slots=True)
class _State:
    """What a stream sent last: its turn, messages, and listed blocks' word indices."""

    k: int
    segs: list[Segment]
    picks: np.ndarray
    key: int


class _Stream:
    """One agent's requests in a trace (or one of its chains, when the scheduler split them:
    `chain`), and where each sits."""

    def __init__(self, trace: Trace, path: str, chain: list[TraceRequest] | None) -> None:
        items, self.prefix_tokens = trace.items, trace.prefix_tokens
        agents = path.split(":", 1)[0]  # "agent_001/agent_007:fa:002" -> its agent's listing
        for agent in agents.split("/") if agents else []:
            sub = next((i for i in items if isinstance(i, SubAgent) and i.agent_id == agent),
                       None)
            if sub is None:
                items = []
                break
            items, self.prefix_tokens = sub.items, sub.prefix_tokens
        self.trace = trace  # held: the cache key is its id
        listed = [i for i in items if isinstance(i, TraceRequest)]
        self.requests = listed if chain is None else chain
        if chain is not None and chain and listed and chain[0] is not listed[0]:
            # A split-off chain has the agent's system message only when its first request
            # starts with the same blocks (AIPerf's _chain_init_tokens: never fabricated).
            n = math.ceil(self.prefix_tokens / trace.block_size)
            if n == 0 or chain[0].hash_ids[:n] != listed[0].hash_ids[:n]:
                self.prefix_tokens = 0
        self.index: dict[int, int] = {}
        self.find(None)

    def find(self, r: TraceRequest | None) -> int | None:
        """The request's place in the stream; a chain the scheduler extends as it goes is
        indexed as far as it has grown."""
        k = self.index.get(id(r))
        if k is None and len(self.index) < len(self.requests):
            for j in range(len(self.index), len(self.requests)):
                self.index[id(self.requests[j])] = j
            k = self.index.get(id(r))
        return k


def cache_bust_marker(benchmark_id: str, recycle_pass: int, lane: int, trace_id: str) -> str:
    """AIPerf's first-turn-prefix marker (ai-dynamo/aiperf:src/aiperf/timing/strategies/
    cache_bust.py@dfcac739c87a6ff76fea27252fac1dc2348f7cd0, build_cache_bust_marker)."""
    digest = hashlib.sha256(f"{benchmark_id}:{recycle_pass}:{lane}:{trace_id}".encode())
    return f"[rid:{digest.hexdigest()[:12]}]\n\n"


class AgenticBodies:
    def __init__(self, prompts: BlockPrompts, body_base: dict[str, Any], prompt_overhead: int,
                 api: str = "completions", cache_bust: str = "first_turn_prefix",
                 benchmark_id: str | None = None,
                 history_bytes: int = DEFAULT_HISTORY_BYTES,
                 max_tokens_field: str = "max_tokens") -> None:
        if cache_bust not in CACHE_BUST_MODES:
            raise ValueError(f"cache_bust {cache_bust!r}: use one of {CACHE_BUST_MODES}")
        self.prompts, self.api, self.cache_bust = prompts, api, cache_bust
        self.overhead = prompt_overhead
        # chat's output cap: max_completion_tokens as AIPerf's chat endpoint sends it
        # (aiperf 0.13.0 endpoints/openai_chat.py), or max_tokens (request_style=harness)
        self._cap_field = max_tokens_field.encode()
        self.benchmark_id = benchmark_id
        self.table = TokenTable(prompts.tokenizer, prompts.vocab)
        # Streams' histories as word indices (2 bytes a token), the least recently sent
        # evicted past this (rebuilt whole if it comes back).
        self.history_bytes = history_bytes
        self._held = 0
        self.generated_blocks = 0  # blocks whose words were drawn (benchmarks)
        self.template = TemplateOverhead(prompts.tokenizer) if api == "chat" else None
        self._head = body_head(body_base)
        self._streams: dict[tuple[int, str], _Stream] = {}
        self._states: OrderedDict[tuple[object, str], _State] = OrderedDict()
        self._markers: OrderedDict[tuple[str, str], tuple[str, bytes, int]] = OrderedDict()
        self._recycle_pass: dict[str, int] = {}
        self._n = 0

    # ---- where a request sits ----------------------------------------------------------
    def _stream(self, ctx: ReplayContext) -> _Stream:
        # A path names one stream of a trace (the scheduler's chains included): built from
        # the first context that names it, whose chain may go on growing.
        key = (id(ctx.trace), ctx.path)
        s = self._streams.get(key)
        if s is None:
            s = self._streams[key] = _Stream(ctx.trace, ctx.path, getattr(ctx, "chain", None))
        return s

    def _history(self, r: TraceRequest, ctx: ReplayContext, tree: tuple[str, str], key: int
                 ) -> tuple[list[Segment], np.ndarray]:
        """The request's messages and the word indices of its listed blocks: from the
        stream's previous turn when known (only the new blocks generated), else built whole."""
        stream = self._stream(ctx)
        k = stream.find(r)
        bs = ctx.trace.block_size
        covered = covered_blocks(r, bs)
        if k is None:  # not in a stream this module knows: a first turn of its own
            return first_turn(r, bs, 0), self._picks(key, r.hash_ids[:covered], bs)
        skey = (tree, ctx.path)
        st = self._states.pop(skey, None)
        if st is not None and (st.key != key or st.k > k):
            self._held -= st.picks.nbytes
            st = None
        segs = structure(stream.requests, k, bs, stream.prefix_tokens,
                         None if st is None else (st.k, st.segs))
        if st is not None and st.k == k:
            picks = st.picks
        elif st is not None and st.k == k - 1:
            prev = stream.requests[k - 1]
            lcp = common_prefix(prev.hash_ids, r.hash_ids,
                                min(covered, covered_blocks(prev, bs)))
            picks = np.concatenate([st.picks[:lcp * bs],
                                    self._picks(key, r.hash_ids[lcp:covered], bs)])
        else:
            picks = self._picks(key, r.hash_ids[:covered], bs)
        self._held += picks.nbytes - (st.picks.nbytes if st is not None else 0)
        self._states[skey] = _State(k, segs, picks, key)
        while self._held > self.history_bytes and len(self._states) > 1:
            _, old = self._states.popitem(last=False)  # the least recently sent stream
            self._held -= old.picks.nbytes
        return segs, picks

    def _picks(self, key: int, ids: list[int], bs: int) -> np.ndarray:
        self.generated_blocks += len(ids)
        return self.table.picks(key, ids, bs).reshape(-1)

    def _benchmark(self, ctx: ReplayContext) -> str:
        if self.benchmark_id is not None:
            return self.benchmark_id
        salt = ctx.salt
        return str(salt[0]) if isinstance(salt, tuple) and salt else ""

    def _scope(self, ctx: ReplayContext) -> str:
        if self.cache_bust == "per_block":
            return repr(ctx.salt)
        tr = ctx.trace
        return f"{self._benchmark(ctx)}|{'shared' if tr.shared_scope else tr.id}"

    def marker(self, ctx: ReplayContext) -> tuple[str, bytes, int]:
        """(digest, JSON bytes, tokens) of the tree's marker; minted on the tree's first use."""
        if self.cache_bust != "first_turn_prefix":
            return "", b"", 0
        tree = (repr(ctx.salt), ctx.session)
        m = self._markers.get(tree)
        if m is not None:
            self._markers.move_to_end(tree)
        else:
            base = ctx.trace.id.split("::", 1)[0]
            n = self._recycle_pass[base] = self._recycle_pass.get(base, -1) + 1
            text = cache_bust_marker(self._benchmark(ctx), n, ctx.lane, base)
            tokens = len(self.prompts.tokenizer.encode(text, add_special_tokens=False))
            m = self._markers[tree] = (text[5:17], json_string_bytes(text), tokens)
            if len(self._markers) > _MARKERS:
                self._markers.popitem(last=False)
        return m

    # ---- the request -------------------------------------------------------------------
    def spec(self, r: TraceRequest, ctx: ReplayContext, max_tokens: int | None = None
             ) -> RequestSpec:
        tr, bs = ctx.trace, ctx.trace.block_size
        tree = (repr(ctx.salt), ctx.session)
        scope = self._scope(ctx)
        key = scope_key(self.prompts.seed, scope)
        segs, picks = self._history(r, ctx, tree, key)
        digest, marker, marker_tokens = self.marker(ctx)
        if first_user(segs) < 0:
            digest, marker, marker_tokens = "", b"", 0
        covered = covered_blocks(r, bs)
        ids = r.hash_ids

        def blocks_of(start: int, end: int) -> list[np.ndarray]:
            return [picks[start * bs:end * bs]] if end > start else []

        tail = self.table.tail(key, (ctx.path, self._stream(ctx).find(r), r.t),
                               r.in_tokens - covered * bs)
        out = r.out_tokens if max_tokens is None else max_tokens
        if self.template is not None:
            chunks = chat_chunks(self._head, segs, blocks_of, marker, tail, out, self._cap_field)
            expected = r.in_tokens + marker_tokens + self.template([s.role for s in segs])
        else:
            chunks = completion_chunks(self._head, segs, blocks_of, marker, tail, out)
            expected = r.in_tokens + marker_tokens + self.overhead
        self._n += 1
        tags = {"lane": ctx.lane, "session": ctx.session, "trace": tr.id, "agent": ctx.path,
                "turn": ctx.turn, "recorded_t": r.t, "think": r.think, "in": r.in_tokens,
                "out": r.out_tokens, "block_size": bs, "salt": scope, "marker": digest,
                "segments": [[s.role, s.start, s.end] for s in segs],
                "hash_ids": ids if covered == len(ids) else ids[:covered], **ctx.extra}
        return RequestSpec(
            request_id=f"{ctx.session}/{ctx.path or 'main'}/{ctx.turn}/{self._n}",
            path="/v1/chat/completions" if self.template is not None else "/v1/completions",
            body=self.table.assemble(chunks),  # type: ignore[arg-type]  # bytearray: sent as is
            expected_prompt_tokens=expected,
            max_tokens=out, phase=ctx.phase, tags=tags)


def prefix_path(tags: dict[str, Any]) -> list[object]:
    """What a request's prompt is made of, block by block, for a prefix trie: the block's
    scope and id, the messages that start at it (their template tokens come first), and the
    tree's marker from the first user message on. Two requests share a prefix on the server
    exactly as far as these agree."""
    scope, ids = tags["salt"], tags["hash_ids"]
    segs = tags.get("segments") or []
    marker = tags.get("marker") or ""
    if not segs and not marker:
        return [(scope, h) for h in ids]
    starts: dict[int, str] = {}
    for role, start, _ in segs:
        starts[start] = starts.get(start, "") + role[0]
    m_at = next((s for role, s, _ in segs if role == "user"), math.inf) if marker else math.inf
    return [(scope, h, starts.get(i, ""), marker if i >= m_at else "")
            for i, h in enumerate(ids)]


def replayed_hit_rates(records: list[RequestRecord]) -> dict[str, float]:
    """Theoretical prefix-hit rate of what was replayed (an infinite cache over the blocks
    sent, in send order, warmup included), and what the server reported in usage."""
    trie = PrefixTrie()
    hit = total = 0
    cached = prompt = 0
    for r in sorted(records, key=lambda r: r.send_ts):
        t = r.tags
        if "hash_ids" not in t:
            continue
        matched = trie.match_and_insert(prefix_path(t))
        if r.phase != PHASE_MEASURED or not r.ok:
            continue
        hit += hit_tokens(matched, int(t["block_size"]), int(t["in"]))
        total += int(t["in"])
        if r.cached_tokens >= 0 and r.prompt_tokens > 0:
            cached += r.cached_tokens
            prompt += r.prompt_tokens
    return {
        "theoretical_hit_rate": hit / total if total else math.nan,
        "server_hit_rate": cached / prompt if prompt else math.nan,
    }
