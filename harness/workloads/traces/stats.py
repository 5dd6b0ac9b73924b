"""What a trace file holds, and the prefix-cache hit rate its block structure allows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.workloads.traces.model import Trace, TraceRequest


class PrefixTrie:
    """An infinite prefix cache over block-hash sequences (what a radix/prefix cache keeps)."""

    def __init__(self) -> None:
        self.root: dict = {}

    def match_and_insert(self, ids: Sequence[object]) -> int:
        """Leading blocks already cached, then cache the whole sequence."""
        node, matched, hit = self.root, 0, True
        for h in ids:
            nxt = node.get(h)
            if nxt is None:
                hit = False
                nxt = node[h] = {}
            elif hit:
                matched += 1
            node = nxt
        return matched


def hit_tokens(matched_blocks: int, block_size: int, in_tokens: int) -> int:
    return min(matched_blocks * block_size, in_tokens)


def theoretical_hit_rate(requests: Iterable[tuple[Sequence[object], int, int]]) -> float:
    """Share of prompt tokens an infinite prefix cache serves, over (ids, in, block) in order."""
    trie = PrefixTrie()
    hit = total = 0
    for ids, in_tokens, block in requests:
        hit += hit_tokens(trie.match_and_insert(ids), block, in_tokens)
        total += in_tokens
    return hit / total if total else float("nan")


def trace_hit_rate(traces: Sequence[Trace]) -> float:
    """Over the listed order of every trace; ids are per trace unless the scope is shared."""
    def rows():
        for tr in traces:
            scope = "shared" if tr.shared_scope else tr.id
            for r in tr.requests():
                yield [(scope, h) for h in r.hash_ids], r.in_tokens, tr.block_size
    return theoretical_hit_rate(rows())


@dataclass
class TraceStats:
    files: int
    sessions: int
    requests: int
    subagents: int
    isl: dict[str, float]
    osl: dict[str, float]
    think_s: dict[str, float]
    block_sizes: list[int]
    hit_rate: float


def _pct(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {}
    return {"p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max()), "mean": float(a.mean())}


def trace_stats(traces: Sequence[Trace], files: int = 1) -> TraceStats:
    reqs: list[TraceRequest] = [r for t in traces for r in t.requests()]
    return TraceStats(
        files=files,
        sessions=len(traces),
        requests=len(reqs),
        subagents=sum(len(t.subagents()) for t in traces),
        isl=_pct([r.in_tokens for r in reqs]),
        osl=_pct([r.out_tokens for r in reqs]),
        think_s=_pct([r.think for r in reqs]),
        block_sizes=sorted({t.block_size for t in traces}),
        hit_rate=trace_hit_rate(traces),
    )


def format_stats(s: TraceStats, title: str) -> str:
    def row(name: str, d: dict[str, float], unit: str) -> str:
        if not d:
            return f"  {name:<10} -"
        return (f"  {name:<10} p50 {d['p50']:>10,.1f}  p90 {d['p90']:>10,.1f}  "
                f"p99 {d['p99']:>10,.1f}  max {d['max']:>10,.1f}  {unit}")
    return "\n".join([
        title,
        f"  sessions {s.sessions}, requests {s.requests}, sub-agents {s.subagents}, "
        f"block size {', '.join(map(str, s.block_sizes))} tokens",
        row("ISL", s.isl, "tokens"),
        row("OSL", s.osl, "tokens"),
        row("think", s.think_s, "s"),
        f"  theoretical prefix-hit rate (infinite cache, listed order): {s.hit_rate:.3f}",
    ])
