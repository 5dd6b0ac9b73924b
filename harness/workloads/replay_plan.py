"""A recorded session tree as the replay runs it (docs/replay.md): streams of turns with their
pacing, sub-agent branches spawned by one parent turn and joined by another, and the lane's
start point t*. Pure functions of the trace; the scheduler (harness.workloads.replay) runs them.

Upstream: SemiAnalysisAI/aiperf:src/aiperf/dataset/loader/
weka_trace.py@2141c6217b7f051379eca54263cee8eb62767304 (branches, joins, pacing),
SemiAnalysisAI/aiperf:src/aiperf/timing/trajectory_source.py@996eca9d6947971cd319b0adc9914b49e33fddab
(the start point; the same in PyPI aiperf 0.13.0) and
SemiAnalysisAI/aiperf:src/aiperf/timing/branch_orchestrator.py@7ee18816f7d1101a13f0518c68ce267159ee7a62
(when a sub-agent's children start; aiperf 0.13.0 `_spawn_children_and_register_gates`).
InferenceX pins the fork at 754356e9, which no stored copy holds; these are the nearest
stored commits, and 0.13.0 agrees with them on every rule used here.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from harness.workloads.traces.chains import Indexed, split_chains
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest

_EPS = 1e-6
JOIN_RULES = ("tiered", "next_turn")
PACINGS = ("end_to_start", "think_time", "start_to_start")
# t*'s seed: sha256(f"{seed}:{trace}:{lane}") for every lane (upstream) | sha256(f"{seed}:{trace}"),
# `:lane<i>` added only for lanes beyond the corpus (this harness's earlier rule)
START_SEEDS = ("trace_lane", "trace")
# a branch that starts after its spawn turn ended: its children at their offsets from the
# branch's recorded start, counted from the spawn turn's return (upstream) | at their recorded
# gap after the spawn turn's end (this harness's earlier rule)
SUBAGENT_STARTS = ("branch_start", "spawn_end")


@dataclass(frozen=True)
class PlanTurn:
    req: TraceRequest
    t: float  # recorded start, seconds from the trace's start (sub-agents' too)
    delay: float  # the wait after the stream's previous turn ended (0 for its first)

    @property
    def end(self) -> float:
        return self.t + self.req.api_time


@dataclass
class Stream:
    name: str  # "" for the root; "agent_001", "agent_001:fa:001", ":fa:002" (root chains)
    kind: str  # the sub-agent's type, "" for the root and its chains
    turns: list[PlanTurn]


@dataclass
class Branch:
    id: str
    spawn: int  # the root turn that spawns it
    join: int | None  # the root turn that waits for it; None: background, gates nothing
    start_t: float  # its earliest marker
    children: list[Stream]


@dataclass
class TreePlan:
    trace: Trace
    root: Stream
    branches: list[Branch]
    dropped: list[str] = field(default_factory=list)  # sub-agents with no parent turn before

    def streams(self) -> list[Stream]:
        return [self.root, *(c for b in self.branches for c in b.children)]

    def span(self) -> tuple[float, float]:
        starts = [t.t for s in self.streams() for t in s.turns]
        return min(starts), max(starts)

    def spawned_by(self, turn: int) -> list[Branch]:
        return [b for b in self.branches if b.spawn == turn]

    def joined_at(self, turn: int) -> list[Branch]:
        return [b for b in self.branches if b.join == turn]


def _pace(turns: list[tuple[float, TraceRequest]], pacing: str) -> list[PlanTurn]:
    out: list[PlanTurn] = []
    for k, (t, r) in enumerate(turns):
        if k == 0:
            d = 0.0
        elif pacing == "think_time":
            d = r.think
        else:
            pt, pr = turns[k - 1]
            d = t - pt - (pr.api_time if pacing == "end_to_start" else 0.0)
        out.append(PlanTurn(r, t, max(0.0, d)))
    return out


def _absolute(sub: SubAgent, r: TraceRequest) -> float:
    # Legacy captures record a sub-agent's request times from its spawn, current ones from the
    # trace's start: a time before the spawn marker is relative (weka_trace.py
    # `_subagent_request_absolute_t`).
    return sub.t + r.t if r.t + _EPS < sub.t else r.t


def _sub_end(sub: SubAgent) -> float:
    if sub.duration > 0:
        return sub.t + sub.duration
    reqs = [i for i in sub.items if isinstance(i, TraceRequest)]
    return max((_absolute(sub, r) + r.api_time for r in reqs), default=sub.t)


def _chain_streams(prefix: str, items: list[Indexed], kind: str, split: bool,
                   pacing: str) -> list[Stream]:
    chains = split_chains(items) if split else [sorted(items, key=lambda i: (i[1], i[0]))]
    return [Stream(prefix if n == 0 else f"{prefix}:fa:{n:03d}", kind,
                   _pace([(t, r) for _, t, r in ch], pacing)) for n, ch in enumerate(chains)]


def _join_turn(after_index: int, end: float, root_idx: list[int], root_t: list[float],
               rule: str) -> int | None:
    """The root turn a branch gates: tiered (the first later root turn at or after the
    branch's recorded end; none: background) or next_turn (the next root turn listed)."""
    for pos, (oi, t) in enumerate(zip(root_idx, root_t, strict=True)):
        if oi <= after_index:
            continue
        if rule == "next_turn" or t + _EPS >= end:
            return pos
    return None


def build_plan(trace: Trace, join_rule: str = "tiered", pacing: str = "end_to_start",
               split: bool = True) -> TreePlan:
    listed = list(enumerate(trace.items))
    normals: list[Indexed] = [(i, it.t, it) for i, it in listed if isinstance(it, TraceRequest)]
    subs = [(i, it) for i, it in listed if isinstance(it, SubAgent)]
    streams = _chain_streams("", normals, "", split, pacing)
    root = streams[0]
    main_ids = {id(t.req) for t in root.turns}
    root_idx = [i for i, _, r in sorted(normals, key=lambda n: (n[1], n[0])) if id(r) in main_ids]
    root_t = [t.t for t in root.turns]
    groups: dict[tuple[int, int | None], Branch] = {}
    dropped: list[str] = []
    for oi, sub in subs:
        spawn = max((p for p, i in enumerate(root_idx) if i < oi), default=None)
        if spawn is None:  # nothing can spawn it (weka_trace.py `_dropped_subagent_indices`)
            dropped.append(sub.agent_id)
            continue
        join = _join_turn(oi, _sub_end(sub), root_idx, root_t, join_rule)
        inner = [(k, _absolute(sub, r), r) for k, r in enumerate(sub.items)
                 if isinstance(r, TraceRequest)]
        children = _chain_streams(sub.agent_id, inner, sub.kind, split, pacing)
        b = groups.setdefault((spawn, join), Branch(f"spawn:{sub.agent_id}", spawn, join,
                                                    sub.t, []))
        b.start_t = min(b.start_t, sub.t)
        b.children.extend(c for c in children if c.turns)
    for n, s in enumerate(streams[1:], 1):  # the root's own parallel chains (flat agents)
        first = next(i for i, t, r in normals if r is s.turns[0].req)
        spawn = max((p for p, i in enumerate(root_idx) if i < first), default=0)
        end = max(t.end for t in s.turns)
        join = _join_turn(first, end, root_idx, root_t, "tiered")
        b = groups.setdefault((spawn, join), Branch(f"flatspawn:{n}", spawn, join,
                                                    s.turns[0].t, []))
        b.start_t = min(b.start_t, s.turns[0].t)
        b.children.append(s)
    return TreePlan(trace, root, [b for b in groups.values() if b.children], dropped)


@dataclass(frozen=True)
class StartPoint:
    t: float  # t*, seconds from the trace's start; -inf: from the beginning
    root_next: int  # the root's first turn at or after t*


def start_seed(seed: int, trace_id: str, lane: int, rule: str = "trace_lane",
               wraps: bool = False) -> int:
    """The RNG seed of a lane's t*. `trace_lane`: trajectory_source.py `_seed_for_trace_lane`,
    which `_build_trajectory_for_lane` uses for every lane (its absolute index); `trace`:
    `_seed_for_trace`, lane-salted only for lanes beyond the corpus (our earlier rule)."""
    if rule == "trace_lane":
        key = f"{seed}:{trace_id}:{lane}"
    else:
        key = f"{seed}:{trace_id}" + (f":lane{lane}" if wraps else "")
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def start_point(plan: TreePlan, seed: int, lo: float, hi: float) -> StartPoint:
    """t* uniform in [lo, hi] of the tree's recorded span (the first and last request start over
    every stream) from `np.random.default_rng(seed)` (start_seed), drawn in milliseconds as
    `_build_timestamped_trajectory` draws it; clamped so the root keeps a turn to profile."""
    turns = plan.root.turns
    if len(turns) < 2:
        return StartPoint(-math.inf, 0)
    a, b = plan.span()
    start_ms, dur_ms = a * 1000.0, (b - a) * 1000.0
    lo_ms, hi_ms = start_ms + lo * dur_ms, start_ms + hi * dur_ms
    hi_ms = max(hi_ms, lo_ms)
    t_ms = lo_ms if hi_ms == lo_ms else float(np.random.default_rng(seed).uniform(lo_ms, hi_ms))
    t = min(t_ms / 1000.0, turns[-1].t)
    nxt = next(k for k, tu in enumerate(turns) if tu.t >= t)
    return StartPoint(t, nxt) if nxt > 0 else StartPoint(-math.inf, 0)


def overlaps_spawn(plan: TreePlan, b: Branch) -> bool:
    """The branch was recorded starting before its spawn turn ended: it starts when that turn
    is sent (upstream `on_credit_issued`: branch start < the turn's t + api_time)."""
    return b.start_t < plan.root.turns[b.spawn].end


def child_offsets(plan: TreePlan, b: Branch, rule: str = "branch_start") -> list[float]:
    """Each child's wait, in seconds, from the moment its branch starts: the spawn turn's send
    for an overlapping branch (its first t - the turn's t), else the turn's return. There,
    `branch_start`: its first t - the branch's recorded start, so the earliest child leaves at
    once (`_child_dispatch_offset_ms`); `spawn_end`: its first t - the turn's recorded end."""
    spawn = plan.root.turns[b.spawn]
    if overlaps_spawn(plan, b):
        anchor = spawn.t
    else:
        anchor = b.start_t if rule == "branch_start" else spawn.end
    return [max(0.0, c.turns[0].t - anchor) for c in b.children]


def next_turn(stream: Stream, t: float) -> int | None:
    """The stream's first turn at or after t (None: it ended before t)."""
    return next((k for k, tu in enumerate(stream.turns) if tu.t >= t), None)
