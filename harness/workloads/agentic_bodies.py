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
from typing import Any

from harness.records import PHASE_MEASURED, RequestRecord, RequestSpec
from harness.workloads.block_table import BlockSource, TokenTable, scope_key
from harness.workloads.chat_bodies import (
    Segment,
    TemplateOverhead,
    body_head,
    chat_chunks,
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
_STATES = 1 << 16  # streams whose messages are remembered (a lane's few; evicted: rebuilt)


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
        self.index = {id(r): k for k, r in enumerate(self.requests)}


def cache_bust_marker(benchmark_id: str, recycle_pass: int, lane: int, trace_id: str) -> str:
    """AIPerf's first-turn-prefix marker (ai-dynamo/aiperf:src/aiperf/timing/strategies/
    cache_bust.py@dfcac739c87a6ff76fea27252fac1dc2348f7cd0, build_cache_bust_marker)."""
    digest = hashlib.sha256(f"{benchmark_id}:{recycle_pass}:{lane}:{trace_id}".encode())
    return f"[rid:{digest.hexdigest()[:12]}]\n\n"


class AgenticBodies:
    def __init__(self, prompts: BlockPrompts, body_base: dict[str, Any], prompt_overhead: int,
                 api: str = "completions", cache_bust: str = "first_turn_prefix",
                 benchmark_id: str | None = None) -> None:
        if cache_bust not in CACHE_BUST_MODES:
            raise ValueError(f"cache_bust {cache_bust!r}: use one of {CACHE_BUST_MODES}")
        self.prompts, self.api, self.cache_bust = prompts, api, cache_bust
        self.overhead = prompt_overhead
        self.benchmark_id = benchmark_id
        self.blocks = BlockSource(TokenTable(prompts.tokenizer, prompts.vocab))
        self.template = TemplateOverhead(prompts.tokenizer) if api == "chat" else None
        self._head = body_head(body_base)
        self._streams: dict[tuple[int, str, int], _Stream] = {}
        self._states: OrderedDict[tuple[object, str], tuple[int, list[Segment]]] = OrderedDict()
        self._markers: OrderedDict[tuple[str, str], tuple[str, bytes, int]] = OrderedDict()
        self._recycle_pass: dict[str, int] = {}
        self._n = 0

    # ---- where a request sits ----------------------------------------------------------
    def _stream(self, ctx: ReplayContext) -> _Stream:
        chain = getattr(ctx, "chain", None)
        key = (id(ctx.trace), ctx.path, id(chain))
        s = self._streams.get(key)
        if s is None:
            s = self._streams[key] = _Stream(ctx.trace, ctx.path, chain)
        return s

    def _segments(self, r: TraceRequest, ctx: ReplayContext, tree: tuple[str, str]
                  ) -> list[Segment]:
        stream = self._stream(ctx)
        k = stream.index.get(id(r))
        bs = ctx.trace.block_size
        if k is None:  # not in a stream this module knows: a first turn of its own
            return first_turn(r, bs, 0)
        key = (tree, ctx.path)
        segs = structure(stream.requests, k, bs, stream.prefix_tokens, self._states.get(key))
        self._states[key] = (k, segs)
        self._states.move_to_end(key)
        if len(self._states) > _STATES:
            self._states.popitem(last=False)
        return segs

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
        if m is None:
            base = ctx.trace.id.split("::", 1)[0]
            n = self._recycle_pass[base] = self._recycle_pass.get(base, -1) + 1
            text = cache_bust_marker(self._benchmark(ctx), n, ctx.lane, base)
            tokens = len(self.prompts.tokenizer.encode(text, add_special_tokens=False))
            m = self._markers[tree] = (text[5:17], json_string_bytes(text), tokens)
            if len(self._markers) > _STATES:
                self._markers.popitem(last=False)
        return m

    # ---- the request -------------------------------------------------------------------
    def spec(self, r: TraceRequest, ctx: ReplayContext, max_tokens: int | None = None
             ) -> RequestSpec:
        tr, bs = ctx.trace, ctx.trace.block_size
        tree = (repr(ctx.salt), ctx.session)
        segs = self._segments(r, ctx, tree)
        scope = self._scope(ctx)
        key = scope_key(self.prompts.seed, scope)
        digest, marker, marker_tokens = self.marker(ctx)
        if first_user(segs) < 0:
            digest, marker, marker_tokens = "", b"", 0
        covered = covered_blocks(r, bs)
        ids = r.hash_ids

        def blocks_of(start: int, end: int) -> list[bytes]:
            return self.blocks.blocks(key, ids[start:end], bs) if end > start else []

        tail = self.blocks.tail(key, (ctx.path, self._stream(ctx).index.get(id(r)), r.t),
                                r.in_tokens - covered * bs)
        out = r.out_tokens if max_tokens is None else max_tokens
        if self.template is not None:
            chunks = chat_chunks(self._head, segs, blocks_of, marker, tail, out)
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
            body=b"".join(chunks), expected_prompt_tokens=expected,
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
