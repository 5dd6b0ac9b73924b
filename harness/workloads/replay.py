"""Agentic trace replay as AgentX runs it (docs/replay.md; docs/methodology.md §6).

Concurrency N = N lanes, each one live session tree (a root stream, its sub-agents' streams,
its parallel chains; harness.workloads.replay_plan), replayed closed-loop: a stream's next turn
is sent its recorded idle gap after its previous turn ended; a sub-agent branch starts when the
turn that spawned it returns (or is sent, when the capture overlapped them), each child at its
recorded offset from the branch's start (replay_plan.child_offsets); the root turn a branch
gates waits until every child stream of it ended (an error ends a child too). Waits are timers
on one clock whose idle caps move them forward in sets (harness.workloads.replay_clock).

Warmup (AIPerf's agentic warmup): each lane starts at t*, 25-75% into its tree's recorded span;
every stream alive at t* sends the turn before t* with one output token (the primers, spread so
every lane's t* lands together), then each lane sends `warmup_requests_per_lane` more one-token
requests that advance it (further turns, idle gaps removed). Profiling starts when they drained;
each stream's first measured request is its next turn. A lane recycles when its root sent its
last turn and the whole tree drained; the next trace (one shared sequence across lanes,
harness.workloads.replay_sessions) replays from turn 0 with a fresh salt and fresh session ids.
Profiling lasts `duration_s`; requests in flight then finish and count.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from harness.client.streaming import StreamingClient
from harness.records import PHASE_MEASURED, PHASE_PROBE, PHASE_WARMUP, RequestRecord, RequestSpec
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.replay_clock import ReplayClock
from harness.workloads.replay_context import ReplayContext
from harness.workloads.replay_plan import (
    Branch,
    StartPoint,
    Stream,
    TreePlan,
    build_plan,
    child_offsets,
    next_turn,
    overlaps_spawn,
    start_point,
    start_seed,
)
from harness.workloads.replay_result import ReplayResult, measured_window
from harness.workloads.replay_sessions import SessionIds, TraceSampler
from harness.workloads.replay_settings import ReplaySettings
from harness.workloads.traces.model import Trace

_OVERFLOW = re.compile(r"context|exceed|too long|maximum.*length|n_ctx", re.I)
_POLL_S = 0.01  # how often the warmup's end is checked
# A turn's body is built this long before it is due, so that at the due time only the send
# is left (a 1M-token body takes 2-5 ms to build on a slow core); bodies are held only this
# long. benchmarks/agentic_scale.py builds its own the same way.
BUILD_LEAD_S = 0.01


class ReplaySync(Protocol):
    """The barriers a replay shares with the other processes running its lanes
    (harness.workloads.replay_split); without one, the replay is the whole point."""

    async def top(self, lead: float) -> float:
        """This process's longest primer lead -> the longest over every process; every
        process's lanes start when this returns."""

    async def drained(self, least: float) -> tuple[float, float, float]:
        """This process's warmup drained, its parked turns' least offset -> (the profiling
        start t0, the least offset over every process, the wall time at t0)."""


@dataclass
class _Lane:
    index: int
    trace_index: int
    quota: int
    sessions: int = 0


@dataclass
class _Tree:
    plan: TreePlan
    lane: _Lane
    session: str
    salt: object
    ids: SessionIds
    tasks: dict[str, list[asyncio.Task[None]]] = field(default_factory=lambda: defaultdict(list))


@dataclass(frozen=True)
class _Entry:
    """How a stream enters the replay: its first turn, the wait before it, and whether the
    turn before it is sent first as a primer (after `primer_wait`)."""

    start: int
    wait: float
    primer: bool = False
    primer_wait: float = 0.0


class Replayer:
    def __init__(self, client: StreamingClient, traces: list[Trace], lanes: int,
                 settings: ReplaySettings, bodies: AgenticBodies, seed: int,
                 on_done: Callable[[RequestRecord], None] | None = None,
                 salt_prefix: str = "", lane_ids: list[int] | None = None,
                 sampler: TraceSampler | None = None, clock: ReplayClock | None = None,
                 sync: ReplaySync | None = None) -> None:
        if not traces:
            raise ValueError("no traces to replay")
        self.client, self.traces, self.n_lanes = client, traces, lanes
        self.s, self.bodies, self.seed, self.on_done = settings, bodies, seed, on_done
        self.salt_prefix = salt_prefix  # cache-bust scope: one point never shares another's
        self.plans = [build_plan(t, settings.join_rule, settings.pacing, settings.split_chains)
                      for t in traces]
        # lane_ids, sampler, clock, sync: this process runs some of the point's lanes
        # (harness.workloads.replay_split); by default it runs them all.
        self.lane_ids = list(range(lanes)) if lane_ids is None else lane_ids
        self.sampler = sampler or TraceSampler(len(traces), settings.recycle)
        self.sync = sync
        self.trees: list[tuple[int, str]] = []
        self.records: list[RequestRecord] = []
        self.clock = clock or ReplayClock(settings.idle_cap_s, settings.tree_cap_s)
        self.deadline = math.inf
        self.warming = True
        self._parked: list[tuple[float, asyncio.Future[float]]] = []
        self._warm_inflight = 0
        self._primers_left = 0
        self._trees: dict[str, _Tree] = {}
        self._sessions_started = self._sessions_finished = 0
        self.on_measured_start: Callable[[], object] | None = None  # when profiling starts

    # ---- sending -------------------------------------------------------------------
    def _spec(self, tree: _Tree, stream: Stream, k: int, phase: str) -> RequestSpec:
        turn = stream.turns[k]
        ctx = ReplayContext(tree.lane.index, tree.session, tree.salt, tree.plan.trace,
                            path=stream.name, phase=phase, turn=k,
                            chain=[t.req for t in stream.turns],
                            extra={"subagent_type": stream.kind, "delay": turn.delay,
                                   "recorded_abs_t": turn.t})
        spec = self.bodies.spec(turn.req, ctx, None if phase == PHASE_MEASURED else 1)
        if self.s.request_style == "aiperf":  # AIPerf's session headers, recorded in the tags
            spec.headers, ids = tree.ids.request(stream.name)
            spec.tags.update(ids)
        return spec

    async def _send(self, tree: _Tree, stream: Stream, k: int, phase: str,
                    spec: RequestSpec | None = None) -> RequestRecord:
        if spec is None:
            spec = self._spec(tree, stream, k, phase)
        warm = phase != PHASE_MEASURED
        self._warm_inflight += warm
        self.clock.started(tree.session)  # before any await: the caps see it in flight
        try:
            rec = await self.client.send(spec)
        finally:
            self._warm_inflight -= warm
            self.clock.finished(tree.session)
        self.records.append(rec)
        if self.on_done is not None:
            self.on_done(rec)
        return rec

    # ---- one stream ------------------------------------------------------------------
    async def _stream(self, tree: _Tree, stream: Stream, entry: _Entry) -> None:
        if entry.primer:
            try:
                await asyncio.sleep(entry.primer_wait)
                await self._send(tree, stream, entry.start - 1, PHASE_WARMUP)
            finally:
                self._primers_left -= 1
        for k in range(entry.start, len(stream.turns)):
            wait = entry.wait if k == entry.start else stream.turns[k].delay
            if not await self._turn(tree, stream, k, wait):
                return

    async def _turn(self, tree: _Tree, stream: Stream, k: int, wait: float) -> bool:
        """Wait, join, send one turn. False: the stream stops (deadline or overflow)."""
        paced = not self.warming  # warmup turns go without their idle gaps
        root = stream is tree.plan.root
        due, ready = time.perf_counter() + wait, None
        if paced and wait > BUILD_LEAD_S and not (root and self._joins_pending(tree, k)):
            # Built in the think time's last BUILD_LEAD_S, so that at the due time only the
            # send is left; never held through a join (a sub-agent may run for minutes).
            due = await self.clock.wake_before(due, tree.session, BUILD_LEAD_S)
            if due is None:
                return False
            ready = self._spec(tree, stream, k, PHASE_MEASURED)
        if paced and not await self.clock.sleep_until(due, tree.session):
            return False
        if root:
            for b in tree.plan.joined_at(k):
                if tree.tasks.get(b.id):
                    await asyncio.gather(*tree.tasks[b.id])
        phase = PHASE_MEASURED
        if self.warming and tree.lane.quota > 0:
            tree.lane.quota -= 1
            phase = PHASE_PROBE
        elif self.warming:  # the lane used its warmup: this turn opens its profiling
            due = await self._park(wait)
            if not await self.clock.sleep_until(due, tree.session):
                return False
        elif not paced and not await self.clock.sleep_until(time.perf_counter() + wait,
                                                            tree.session):
            return False  # profiling began while this turn waited on its join
        if phase == PHASE_MEASURED and time.perf_counter() >= self.deadline:
            return False
        spawns = tree.plan.spawned_by(k) if root else []
        # A branch recorded as starting before its spawn turn ended runs beside that turn:
        # it starts when the turn is sent; the others when it returns (replay_plan.child_offsets).
        for b in spawns:
            if overlaps_spawn(tree.plan, b):
                self._spawn(tree, b)
        rec = await self._send(tree, stream, k, phase,
                               ready if phase == PHASE_MEASURED else None)
        del ready  # not held through the next think time
        for b in spawns:
            if not overlaps_spawn(tree.plan, b):
                self._spawn(tree, b)
        return not (rec.error and _OVERFLOW.search(rec.error))  # an overflow ends the stream

    def _joins_pending(self, tree: _Tree, k: int) -> bool:
        return any(not t.done() for b in tree.plan.joined_at(k) for t in tree.tasks.get(b.id, ()))

    async def _park(self, wait: float) -> float:
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._parked.append((wait, fut))
        return await fut

    def _spawn(self, tree: _Tree, b: Branch) -> None:
        offsets = child_offsets(tree.plan, b, self.s.subagent_start)
        for child, wait in zip(b.children, offsets, strict=True):
            e = _Entry(0, wait)
            if e.start < len(child.turns):
                tree.tasks[b.id].append(asyncio.create_task(self._stream(tree, child, e)))

    # ---- trees and lanes ------------------------------------------------------------------
    def _new_tree(self, lane: _Lane) -> _Tree:
        lane.sessions += 1
        self._sessions_started += 1
        plan = self.plans[lane.trace_index]
        session = f"L{lane.index}S{lane.sessions}"
        salt: object = (self.salt_prefix, "shared") if plan.trace.shared_scope else (
            self.salt_prefix, session)
        tree = _Tree(plan, lane, session, salt, SessionIds(
            self.s.session_affinity, routing=self.s.correlation_headers))
        self._trees[session] = tree
        self.trees.append((lane.index, plan.trace.id))
        return tree

    def _snapshot(self, tree: _Tree, sp: StartPoint, leads: list[float]) -> list[
            tuple[Stream, _Entry, Branch | None]]:
        """The streams alive at t*: where each enters, and its primer's lead on t*."""
        plan, t = tree.plan, sp.t
        out: list[tuple[Stream, _Entry, Branch | None]] = []
        if sp.root_next > 0:
            out.append((plan.root, _Entry(sp.root_next,
                                          max(0.0, plan.root.turns[sp.root_next].t - t), True),
                        None))
        for b in plan.branches:
            if b.spawn >= sp.root_next:
                continue  # its spawn turn comes after t*: spawned as recorded
            for child in b.children:
                c = next_turn(child, t)
                if c is not None:  # alive at t*: kept, never dropped
                    out.append((child, _Entry(c, max(0.0, child.turns[c].t - t), c > 0), b))
        for stream, e, _ in out:
            if e.primer:
                leads.append(min(t - stream.turns[e.start - 1].t, self.s.idle_cap_s))
        return out

    async def _run_tree(self, tree: _Tree, entries: list[tuple[Stream, _Entry, Branch | None]]
                        ) -> None:
        root_entry = _Entry(0, 0.0)
        for stream, e, b in entries:
            if b is None:
                root_entry = e
            else:
                tree.tasks[b.id].append(asyncio.create_task(self._stream(tree, stream, e)))
        await self._stream(tree, tree.plan.root, root_entry)
        await asyncio.gather(*(t for ts in tree.tasks.values() for t in ts))  # tree drained
        self.clock.tree_closed(tree.session)
        self._trees.pop(tree.session, None)

    async def _lane(self, lane: _Lane, first: _Tree,
                    entries: list[tuple[Stream, _Entry, Branch | None]]) -> None:
        await self._run_tree(first, entries)
        while time.perf_counter() < self.deadline:
            self._sessions_finished += 1
            lane.trace_index = self.sampler.recycle(lane.trace_index)  # recycle
            await self._run_tree(self._new_tree(lane), [])

    # ---- the run ------------------------------------------------------------------------
    def _lanes(self) -> list[_Lane]:
        # Distinct traces first (the sampler's first draws); lanes beyond the corpus wrap.
        return [_Lane(i, self.sampler.first(i), self.s.warmup_requests_per_lane)
                for i in self.lane_ids]

    async def _warmup_drained(self, lanes: list[_Lane], tasks: list[asyncio.Task[None]]
                              ) -> None:
        while not (self._primers_left == 0 and self._warm_inflight == 0
                   and all(ln.quota == 0 or t.done() for ln, t in zip(lanes, tasks,
                                                                      strict=True))):
            for t in tasks:
                if t.done() and t.exception() is not None:
                    raise t.exception()  # a lane failed: never wait on it
            await asyncio.sleep(_POLL_S)

    def _least(self) -> float:
        return min((w for w, _ in self._parked), default=math.inf)

    def _handoff(self, t0: float | None = None, least: float | None = None) -> float:
        """Profiling starts: parked turns fire at their offsets less the smallest of them (the
        earliest at once, the others keep their spacing); the caps and the deadline start.
        t0 and least: the instant and the smallest offset over every process (ReplaySync)."""
        self.warming = False
        t0 = time.perf_counter() if t0 is None else t0
        self.deadline = t0 + self.s.duration_s
        if least is None:
            least = self._least()
        least = least if math.isfinite(least) else 0.0
        for w, fut in self._parked:
            fut.set_result(t0 + w - least)
        self._parked.clear()
        self.clock.activate(list(self._trees), self.deadline)
        return t0

    async def run(self) -> ReplayResult:
        lanes = self._lanes()
        firsts, plans_in, leads, points = [], [], [], []
        for ln in lanes:
            tree = self._new_tree(ln)
            seed = start_seed(self.seed, tree.plan.trace.id, ln.index, self.s.start_seed,
                              wraps=ln.index >= len(self.traces))
            sp = start_point(tree.plan, seed, self.s.start_min, self.s.start_max)
            points.append(sp.t)
            firsts.append(tree)
            plans_in.append(self._snapshot(tree, sp, leads))
        top = max(leads, default=0.0)
        if self.sync is not None:  # the spread is over every process's lanes
            top = await self.sync.top(top)
        lead_iter = iter(leads)
        for entries in plans_in:  # the spread: each primer goes max_lead - lead after start
            for i, (stream, e, b) in enumerate(entries):
                if e.primer:
                    wait = top - next(lead_iter) if self.s.primer_start == "spread" else 0.0
                    entries[i] = (stream, _Entry(e.start, e.wait, True, wait), b)
                    self._primers_left += 1
        tasks = [asyncio.create_task(self._lane(ln, tr, en))
                 for ln, tr, en in zip(lanes, firsts, plans_in, strict=True)]
        try:
            await self._warmup_drained(lanes, tasks)
            if self.sync is not None:  # profiling starts when every process's warmup drained
                at, least, start_wall = await self.sync.drained(self._least())
                t0 = self._handoff(at, least)
            else:
                if self.on_measured_start is not None:
                    self.on_measured_start()
                start_wall = time.time()
                t0 = self._handoff()
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            self.clock.close()
        return self._result(t0, start_wall, points)

    def _result(self, t0: float, start_wall: float, points: list[float]) -> ReplayResult:
        start, end = measured_window(self.records, self.s.window, t0, self.deadline)
        return ReplayResult(self.records, start, end, start_wall, self._sessions_started,
                            self._sessions_finished, t0, self.deadline, points, self.trees,
                            self.clock.jumps)

