"""Agentic trace replay (AgentX, docs/methodology.md §6).

Concurrency N = N live session trees ("lanes"), a closed loop over sessions. Inside a session
the recorded think time is honoured end-to-start; a sub-agent starts at its recorded offset
after the parent request before it and runs its own requests; a parent request waits for the
sub-agents that had finished before it in the recording (its joins). Idle gaps are capped:
`tree_cap_s` per wait, and `idle_cap_s` when nothing is in flight anywhere. Each lane starts at
a random point 25-75% into its trace and first sends the turn before it (warmup) and a few
one-token probes; afterwards traces are recycled with a fresh cache-bust salt. Everything is
seeded; the measured phase lasts `duration_s` (requests in flight at the end finish).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.client import StreamingClient
from harness.records import PHASE_MEASURED, PHASE_PROBE, PHASE_WARMUP, RequestRecord, RequestSpec
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.replay_context import ReplayContext
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest

_SLICE_S = 0.05  # sleepers re-check the idle cap this often


@dataclass
class ReplaySettings:
    duration_s: float
    idle_cap_s: float = 10.0
    tree_cap_s: float = 300.0
    warmup_probes: int = 2
    start_min: float = 0.25
    start_max: float = 0.75
    api: str = "completions"


@dataclass
class ReplayResult:
    records: list[RequestRecord]
    start_ts: float  # the measured phase began (after every lane's warmup)
    end_ts: float  # the deadline, or the end of the last measured request if later
    start_wall: float
    sessions_started: int = 0
    sessions_finished: int = 0

    @property
    def duration_s(self) -> float:
        return self.end_ts - self.start_ts


@dataclass
class _Lane:
    index: int
    rng: np.random.Generator
    sessions: int = 0


class Replayer:
    def __init__(self, client: StreamingClient, traces: list[Trace], lanes: int,
                 settings: ReplaySettings, bodies: AgenticBodies, seed: int,
                 on_done: Callable[[RequestRecord], None] | None = None,
                 salt_prefix: str = "") -> None:
        if not traces:
            raise ValueError("no traces to replay")
        self.client, self.traces, self.n_lanes = client, traces, lanes
        self.s, self.bodies = settings, bodies
        self.seed, self.on_done = seed, on_done
        # Cache-bust scope: a point's sessions never share blocks with another point's.
        self.salt_prefix = salt_prefix
        self.records: list[RequestRecord] = []
        self.deadline = math.inf
        self.idle_since: float | None = time.perf_counter()
        self._wakes: dict[int, float] = {}
        self._sessions_started = self._sessions_finished = 0
        self.on_measured_start: Callable[[], object] | None = None  # after every lane warmed

    # ---- sending -------------------------------------------------------------------
    async def _send(self, spec: RequestSpec) -> RequestRecord:
        self.idle_since = None
        rec = await self.client.send(spec)
        if self.client.inflight == 0:
            self.idle_since = time.perf_counter()
        self.records.append(rec)
        if self.on_done is not None:
            self.on_done(rec)
        return rec

    # ---- waiting -------------------------------------------------------------------
    async def _sleep_until(self, wake: float) -> bool:
        """Sleep until `wake` (False: the deadline passed first). While the whole system is
        idle, the earliest sleeper wakes no later than idle_cap_s after it went idle."""
        key = id(asyncio.current_task())
        self._wakes[key] = wake
        try:
            while True:
                now = time.perf_counter()
                if now >= self.deadline:
                    return False
                if now >= wake:
                    return True
                idle = self.idle_since
                if (idle is not None and self.client.inflight == 0
                        and now >= idle + self.s.idle_cap_s
                        and wake <= min(self._wakes.values())):
                    return True
                await asyncio.sleep(min(_SLICE_S, wake - now))
        finally:
            self._wakes.pop(key, None)

    def _cap(self, gap: float) -> float:
        return min(max(gap, 0.0), self.s.tree_cap_s)

    # ---- replaying a tree ------------------------------------------------------------
    async def _run_items(self, items: list[TraceRequest | SubAgent], ctx: ReplayContext,
                         skip_before: float = -math.inf) -> bool:
        """Replay one parent's items; False once the deadline stops it."""
        prev_end = time.perf_counter()
        recorded_end = skip_before if skip_before > -math.inf else 0.0
        subs: list[tuple[SubAgent, asyncio.Task[bool]]] = []
        alive = True
        try:
            for it in items:
                if isinstance(it, SubAgent):
                    if it.t < skip_before:
                        continue
                    offset = self._cap(it.t - recorded_end)
                    sub_ctx = ReplayContext(ctx.lane, ctx.session, ctx.salt, ctx.trace,
                                   path=f"{ctx.path}/{it.agent_id}".lstrip("/"),
                                   extra={"subagent_type": it.kind})
                    subs.append((it, asyncio.create_task(self._sub(it, sub_ctx,
                                                                   prev_end + offset))))
                    continue
                if it.t < skip_before:
                    continue
                for s, task in subs:  # the sub-agents this turn joins (ended before it)
                    if s.end <= it.t and not task.done():
                        alive = await task and alive
                if not alive or not await self._sleep_until(prev_end + self._cap(it.think)):
                    return False
                await self._send(self.bodies.spec(it, ctx))
                ctx.turn += 1
                prev_end = time.perf_counter()
                recorded_end = it.t + it.api_time
            results = await asyncio.gather(*(t for _, t in subs))
            return alive and all(results)
        finally:
            for _, t in subs:
                if not t.done():
                    t.cancel()

    async def _sub(self, sub: SubAgent, ctx: ReplayContext, start: float) -> bool:
        if not await self._sleep_until(start):
            return False
        return await self._run_items(sub.items, ctx)

    # ---- lanes -----------------------------------------------------------------------
    def _new_session(self, lane: _Lane, trace: Trace, phase: str) -> ReplayContext:
        lane.sessions += 1
        self._sessions_started += 1
        session = f"L{lane.index}S{lane.sessions}"
        salt: object = (self.salt_prefix, "shared") if trace.shared_scope else (
            self.salt_prefix, session)
        return ReplayContext(lane.index, session, salt, trace, phase=phase)

    def _start_point(self, lane: _Lane, trace: Trace) -> int:
        n = len(trace.parent_requests())
        if n < 2:
            return 0
        lo = max(1, math.ceil(self.s.start_min * n))
        hi = max(lo, min(n - 1, math.floor(self.s.start_max * n)))
        return int(lane.rng.integers(lo, hi + 1))

    async def _warm(self, lane: _Lane, trace: Trace) -> tuple[ReplayContext, float]:
        """Send the turn before the lane's start point, and one-token probes."""
        ctx = self._new_session(lane, trace, PHASE_WARMUP)
        parents = trace.parent_requests()
        k = self._start_point(lane, trace)
        prime = parents[k - 1] if k > 0 else parents[0]
        ctx.turn = max(k - 1, 0)
        await self._send(self.bodies.spec(prime, ctx))
        ctx.phase = PHASE_PROBE
        for _ in range(self.s.warmup_probes):
            await self._send(self.bodies.spec(prime, ctx, max_tokens=1))
        ctx.phase = PHASE_MEASURED
        ctx.turn = k
        return ctx, parents[k].t if k > 0 else -math.inf

    async def _lane(self, lane: _Lane, first: tuple[ReplayContext, float],
                    trace_index: int) -> None:
        ctx, skip_before = first
        trace = ctx.trace
        while time.perf_counter() < self.deadline:
            finished = await self._run_items(trace.items, ctx, skip_before)
            if not finished:
                return
            self._sessions_finished += 1
            trace_index = (trace_index + 1) % len(self.traces)  # recycle the corpus
            trace = self.traces[trace_index]
            ctx, skip_before = self._new_session(lane, trace, PHASE_MEASURED), -math.inf

    async def run(self) -> ReplayResult:
        rng = np.random.default_rng([self.seed, 0xA6E7])
        lanes = [_Lane(i, np.random.default_rng([self.seed, i])) for i in range(self.n_lanes)]
        order = rng.permutation(len(self.traces))
        starts = [int(order[i % len(order)]) for i in range(self.n_lanes)]
        firsts = await asyncio.gather(*(self._warm(ln, self.traces[s])
                                        for ln, s in zip(lanes, starts, strict=True)))
        if self.on_measured_start is not None:
            self.on_measured_start()
        start_wall = time.time()
        t0 = time.perf_counter()
        self.deadline = t0 + self.s.duration_s
        self.idle_since = t0
        # No GC pause here (unlike fixed-sequence points): replays run for many minutes.
        await asyncio.gather(*(self._lane(ln, f, s)
                               for ln, f, s in zip(lanes, firsts, starts, strict=True)))
        measured = [r for r in self.records if r.phase == PHASE_MEASURED]
        # The window runs to the deadline (lanes thinking are part of it) or, if requests
        # were still streaming then, to the last of them.
        end = max([self.deadline, *(r.end_ts for r in measured)])
        return ReplayResult(self.records, t0, end, start_wall, self._sessions_started,
                            self._sessions_finished)
