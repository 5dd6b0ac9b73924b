"""Agentic lanes split over `client.workers=N` processes (`client.agentic_workers=lanes`,
docs/replay.md "Lanes over workers"): each process runs the whole Replayer (its clock, its
bodies, its client) for lanes i with i mod N == its index, so body building and sending both
scale with cores; the parent coordinates. What spans the processes:

- the system idle cap: one in-flight count in shared memory (every process's requests), and
  one coordinator (the parent) that alone decides a system shift: when the count has been 0
  for `idle_cap_s` with no request started since, it asks every process for its earliest
  pending timer, and, if still nothing started, tells every process to move all its pending
  timers by the one amount that makes the earliest of them all fire now. The shift is decided
  and recorded once (ReplayResult.jumps); tree caps stay in the process that owns the tree;
- the primers' spread: the longest lead over every lane (harness.workloads.replay `run`), and
  one start for every process's lanes;
- the warmup barrier: profiling starts when every process's warmup drained, at one instant t0
  (perf_counter is CLOCK_MONOTONIC: one clock for every process on the host), and parked
  turns fire at their offsets less the least offset over every process;
- the trace sampler's shared cursor (replay_sessions.TraceSampler, `recycle=shared`).

What does not: the order in which processes' requests start within a few hundred microseconds
of one another (the hand-off of a shift is a message), and request ids' body counter (per
process; ids stay unique by session). A lane's requests are all its process's, so a stream's
order is the single process's. Records come back when the phase ends and are merged in
completion order; `on_done` runs then. One scheduler with the HTTP work over the workers
(harness.client.pool, `client.agentic_workers=scheduler`) is the default: AIPerf's shape.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from harness.client.health import ClientHealth
from harness.client.pool import exit_reason
from harness.client.pool_worker import Channel
from harness.client.streaming import run_async
from harness.client.workers import WorkerError, merge_health, process_context
from harness.records import RequestRecord
from harness.workloads.replay_clock import Jumps
from harness.workloads.replay_result import ReplayResult, measured_window
from harness.workloads.replay_settings import ReplaySettings
from harness.workloads.replay_split_worker import (
    BUSY,
    CURSOR,
    EXPIRED,
    STARTS,
    LanesJob,
    Part,
    lanes_worker,
)

_REASK_S = 0.002  # an idle, expired system with a timer due: how soon it is asked again


def split_lanes(lanes: int, workers: int) -> list[list[int]]:
    """Lane i to process i mod N (as harness.client.pool routes them); never an empty one."""
    n = max(1, min(workers, lanes))
    return [list(range(w, lanes, n)) for w in range(n)]


# ---- the parent ---------------------------------------------------------------------------
@dataclass
class _Proc:
    index: int
    process: Any
    channel: Channel | None = None
    part: Part | None = None
    fatal: str = ""
    lost: bool = False


class LanesCoordinator:
    """The parent: starts the processes, answers their barriers, decides system shifts."""

    def __init__(self, jobs: list[LanesJob], settings: ReplaySettings,
                 on_measured_start: Callable[[], object] | None = None) -> None:
        self.jobs, self.s = jobs, settings
        self.on_measured_start = on_measured_start
        ctx = process_context()
        self.lock = ctx.Lock()
        self.shared = ctx.RawArray("q", 4)
        self.shared[CURSOR] = jobs[0].lanes if jobs else 0  # recycles after the first draws
        self._ctx = ctx
        self.procs: list[_Proc] = []
        self.jumps = Jumps()  # the system shifts, decided here
        self.t0 = math.nan
        self.start_wall = math.nan
        self.active = False
        self._asked: dict[str, dict[int, tuple[Any, ...]]] = {"top": {}, "drained": {}}
        self._idle: tuple[int, asyncio.TimerHandle] | None = None  # (starts then, the dog)
        self._query: dict[int, tuple[float, int]] | None = None
        self._query_starts = 0
        self._qid = 0
        self._failed: asyncio.Future[None] | None = None
        self._finished: asyncio.Future[None] | None = None

    # ---- processes ---------------------------------------------------------------------
    async def run(self, env: dict[str, str]) -> list[Part]:
        loop = asyncio.get_running_loop()
        self._failed, self._finished = loop.create_future(), loop.create_future()
        try:
            for i, job in enumerate(self.jobs):
                mine, theirs = socket.socketpair()
                proc = self._ctx.Process(target=lanes_worker,
                                         args=(i, theirs, job, self.shared, self.lock, env),
                                         daemon=True, name=f"lanes-worker-{i}")
                proc.start()
                theirs.close()
                p = _Proc(i, proc)
                self.procs.append(p)
                _, p.channel = await loop.create_unix_connection(
                    lambda p=p: Channel(lambda m: self._on_message(p, m),
                                         lambda: self._on_lost(p)), sock=mine)
            await asyncio.wait([self._failed, self._finished],
                               return_when=asyncio.FIRST_COMPLETED)
            if self._failed.done():
                self._failed.result()  # raises the worker's failure
            return [p.part for p in self.procs if p.part is not None]
        finally:
            if self._idle is not None:
                self._idle[1].cancel()
            await self._stop()

    async def _stop(self) -> None:
        for p in self.procs:
            if p.channel is not None:
                p.channel.write(("close",))
        deadline = time.perf_counter() + 5.0
        while any(p.process.is_alive() for p in self.procs) and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        for p in self.procs:
            if p.process.is_alive():
                p.process.terminate()
            p.process.join(5.0)
            if p.channel is not None:
                p.channel.close()

    def _fail(self, why: str) -> None:
        if self._failed is not None and not self._failed.done():
            self._failed.set_exception(WorkerError(why))

    def _on_lost(self, p: _Proc) -> None:
        p.lost = True
        if p.channel is not None:
            p.channel.closed = True
        if p.part is None:  # it ended before its lanes did: the point cannot stand
            p.process.join(2.0)
            self._fail(f"lanes worker {p.index} of {len(self.jobs)}: "
                       f"{exit_reason(p.index, p.process.exitcode, p.fatal)}\n{p.fatal}".rstrip())

    def _broadcast(self, msg: tuple[Any, ...]) -> None:
        for p in self.procs:
            if p.channel is not None and not p.lost:
                p.channel.write(msg)

    # ---- messages ----------------------------------------------------------------------
    def _on_message(self, p: _Proc, msg: Any) -> None:
        kind = msg[0]
        if kind in ("top", "drained"):
            got = self._asked[kind]
            got[p.index] = msg
            if len(got) == len(self.jobs):
                self._barrier(kind, [got[i][1] for i in sorted(got)])
        elif kind == "idle":
            self._on_idle(msg[1])
        elif kind == "recheck":
            if self.active and self.shared[EXPIRED] and self.shared[BUSY] == 0:
                self._ask_mins(self.shared[STARTS])
        elif kind == "min":
            self._on_min(p, msg)
        elif kind == "done":
            p.part = msg[1]
            if all(q.part is not None for q in self.procs) and not self._finished.done():
                self._finished.set_result(None)
        elif kind == "fatal":
            p.fatal = msg[1]

    def _barrier(self, kind: str, values: list[float]) -> None:
        if kind == "top":  # every process's lanes start now, spread over the longest lead
            self._broadcast(("begin", max(values)))
            return
        if self.on_measured_start is not None:
            self.on_measured_start()
        self.start_wall = time.time()
        self.t0 = time.perf_counter()
        self._broadcast(("start", self.t0, min(values), self.start_wall))
        self.active = True
        if self.shared[BUSY] == 0:
            self._on_idle(self.t0)

    # ---- the system idle cap -----------------------------------------------------------
    def _on_idle(self, since: float) -> None:
        """A process saw the count reach 0 at `since`: the cap runs from the first such
        instant with nothing started after it."""
        if not self.active or not math.isfinite(self.s.idle_cap_s) or self.shared[BUSY]:
            return
        starts = self.shared[STARTS]
        if self._idle is not None:
            if self._idle[0] == starts:
                return  # already timing this idle spell, from its start
            self._idle[1].cancel()
        wait = max(0.0, since + self.s.idle_cap_s - time.perf_counter())
        self._idle = (starts, asyncio.get_running_loop().call_later(wait, self._expire, starts))

    def _expire(self, starts: int) -> None:
        if self.shared[BUSY] == 0 and self.shared[STARTS] == starts:
            self._ask_mins(starts)

    def _ask_mins(self, starts: int) -> None:
        if self._query is not None:
            return  # one question at a time; its answer decides
        self._qid += 1
        self._query, self._query_starts = {}, starts
        self._broadcast(("mins", self._qid))

    def _on_min(self, p: _Proc, msg: tuple[Any, ...]) -> None:
        if self._query is None or msg[1] != self._qid:
            return
        self._query[p.index] = (msg[2], msg[3])
        if len(self._query) < sum(1 for q in self.procs if not q.lost):
            return
        got, self._query = self._query, None
        earliest = min((d for d, _ in got.values()), default=math.inf)
        count = sum(n for _, n in got.values())
        with self.lock:  # nothing may start between the check and the decision
            now = time.perf_counter()
            by = earliest - now
            if self.shared[BUSY] != 0 or self.shared[STARTS] != self._query_starts:
                return  # a request started: the spell is over
            self.shared[EXPIRED] = 1  # as ReplayClock's: expired, whether or not timers move
        if count and by > 0:
            self.jumps.add("system", by, count, now)
            self._broadcast(("shift", by))
        elif count:
            # A timer was due as the answers came (or had fired, its turn not yet run:
            # ReplayClock.pending): if it fired into a join before this process said
            # "expired", its recheck never came; ask again shortly (a request it started
            # ends the spell and the question).
            asyncio.get_running_loop().call_later(_REASK_S, self._expire, self._query_starts)


def replay_over_lanes(job: LanesJob, workers: int,
                      on_measured_start: Callable[[], object] | None = None,
                      on_done: Callable[[RequestRecord], None] | None = None
                      ) -> tuple[ReplayResult, ClientHealth]:
    """The agentic replay of `job` (its lane_ids ignored) with its lanes over `workers`
    processes (module docstring): the merged result as the single process's would read, and
    the health of the worst process. on_done runs on every record once the phase ended."""
    one = replace(job.settings, workers=1)
    jobs = [replace(job, settings=one, lane_ids=ids) for ids in split_lanes(job.lanes, workers)]
    coord = LanesCoordinator(jobs, job.replay, on_measured_start)
    key = job.settings.api_key_env
    env = {key: os.environ[key]} if key and key in os.environ else {}
    parts = run_async(coord.run(env))
    result = merge_parts(parts, coord, job.replay)
    if on_done is not None:
        for rec in result.records:
            on_done(rec)
    return result, merge_health([p.health for p in parts],
                                [f"lanes worker {p.index}" for p in parts])


def merge_parts(parts: list[Part], coord: LanesCoordinator, s: ReplaySettings
                ) -> ReplayResult:
    """The processes' results as one: records in completion order, the first trees in lane
    order then every recycle, t* by lane, the system shifts (decided once, by the parent)
    with each process's tree shifts."""
    records = sorted((r for p in parts for r in p.result.records),
                     key=lambda r: r.end_ts if math.isfinite(r.end_ts) else math.inf)
    deadline = coord.t0 + s.duration_s
    start, end = measured_window(records, s.window, coord.t0, deadline)
    firsts: list[tuple[int, tuple[int, str], float]] = []
    later: list[tuple[int, str]] = []
    for p in parts:
        ids = coord.jobs[p.index].lane_ids
        trees = p.result.trees
        firsts += [(lane, tr, pt) for lane, tr, pt in zip(ids, trees, p.result.start_points,
                                                          strict=False)]
        later += trees[len(ids):]
    firsts.sort(key=lambda x: x[0])
    return ReplayResult(records, start, end, coord.start_wall,
                        sum(p.result.sessions_started for p in parts),
                        sum(p.result.sessions_finished for p in parts), coord.t0, deadline,
                        [pt for _, _, pt in firsts], [tr for _, tr, _ in firsts] + later,
                        Jumps.merged([coord.jumps, *(p.result.jumps for p in parts)]))
