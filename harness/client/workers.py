"""One point's load over N client processes (`client.workers=N`), for hosts where one client
core is not enough. The default (1) runs in-process, as before.

The mechanism is generic: `run_partitioned(job, parts)` runs a picklable `job(part)` in one
process per part (forked from a forkserver that imported the client once), all released
together (a barrier, then one shared start instant), and returns their results in order.
`merge_phases` joins the `PhaseResult`s the parts return into the one the point records:
every record once, the window from the first send to the last end, the client's health
judged by its worst process. Times need no translation: `time.perf_counter` is
CLOCK_MONOTONIC on Linux, one clock for every process on the host (harness/records.py;
tests/client/test_client_workers.py checks a child's stamps fall between the parent's).

What is partitioned:
- closed loop (fixed-sequence): the C request slots; slot s goes to process s mod N and takes
  the specs s, s+C, s+2C... so the total in flight stays C while every process has work;
- timestamped replay: the schedule, request i to process i mod N, every process on one shared
  start instant, so each request still goes out at its scheduled time;
- agentic lanes are not partitioned here: their scheduler's state is global (a system-wide
  idle cap, a warmup barrier over every lane), so one scheduler stays in the parent and only
  the HTTP work goes to N processes, each request to the worker owning its lane
  (harness/client/pool.py, AIPerf's timing process and workers). It reuses this module's
  forkserver (`process_context`) and health merge (`merge_health`).

Progress callbacks (`on_done`) run in the parent as the merged records arrive, after the phase.
"""

from __future__ import annotations

import asyncio
import functools
import math
import multiprocessing as mp
import os
import queue as queue_mod
import time
import traceback
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from harness.client.health import ClientHealth
from harness.client.streaming import ClientSettings, PhaseResult, StreamingClient, run_async
from harness.records import RequestRecord, RequestSpec

P = TypeVar("P")
R = TypeVar("R")
_START_TIMEOUT_S = 120.0  # spawned children import the harness: seconds, not minutes
# The shared start instant: this long after the last process reached the start barrier.
_START_LEAD_S = 0.05
_shared_start = math.nan  # in a child: the instant every process of its run starts at


def shared_start() -> float:
    """In a job run by run_partitioned: the perf_counter instant all parts start at."""
    return _shared_start


def _set_start(value: Any) -> None:  # the barrier's action, run once by the last to arrive
    value.value = time.perf_counter() + _START_LEAD_S


class WorkerError(RuntimeError):
    """A client process failed; its traceback is the message."""


def _child(job: Callable[[Any], Any], part: Any, index: int, barrier: Any, start: Any,
           out: Any, env: dict[str, str]) -> None:
    # Not pinned: the OS spreads the processes over the cores the engine leaves free; pinning
    # here could land a client on a core an engine's threads were given.
    global _shared_start
    os.environ.update(env)  # the forkserver's environment is the one it started with
    try:
        barrier.wait(_START_TIMEOUT_S)
        _shared_start = start.value
        out.put((index, True, job(part)))
    except BaseException:  # the parent must hear why, whatever it was
        out.put((index, False, traceback.format_exc()))


def process_context() -> Any:
    """forkserver: children fork from a clean single-threaded server that imported the client
    once (plain fork would copy the parent's threads' locks: samplers, progress bars; spawn
    pays the imports again for every phase, ~1-2 s). harness.client.pool's workers too."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["harness.client.workers", "harness.client.closed_loop",
                                "harness.client.pool_worker"])
    return ctx


def run_partitioned(job: Callable[[P], R], parts: Sequence[P],
                    env: Sequence[str] = ()) -> list[R]:
    """job(part) for every part, each in its own process, started together; the environment
    variables named in `env` (an API key's) are passed on as the parent has them now.

    `job` must be a module-level function and `parts` picklable. Raises WorkerError naming the
    part whose job raised (with its traceback) or whose process died."""
    ctx = process_context()
    start = ctx.Value("d", math.nan)
    barrier = ctx.Barrier(len(parts), action=functools.partial(_set_start, start))
    out = ctx.Queue()
    passed = {k: os.environ[k] for k in env if k in os.environ}
    procs = [ctx.Process(target=_child, args=(job, p, i, barrier, start, out, passed),
                         daemon=True)
             for i, p in enumerate(parts)]
    for p in procs:
        p.start()
    results: dict[int, R] = {}
    try:
        while len(results) < len(parts):
            try:
                i, ok, value = out.get(timeout=1.0)
            except queue_mod.Empty:
                dead = [i for i, p in enumerate(procs) if i not in results and p.exitcode]
                if dead:
                    raise WorkerError(f"client process {dead[0]} of {len(parts)} died "
                                      f"(exit code {procs[dead[0]].exitcode})") from None
                continue
            if not ok:
                raise WorkerError(f"client process {i} of {len(parts)} failed:\n{value}")
            results[i] = value
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join(10)
    return [results[i] for i in range(len(parts))]


def phases_over_workers(job: Callable[[P], PhaseResult], parts: Sequence[P],
                        settings: ClientSettings) -> PhaseResult:
    """run_partitioned for jobs that return a phase, merged."""
    env = [settings.api_key_env] if settings.api_key_env else []
    return merge_phases(run_partitioned(job, parts, env))


def merge_phases(phases: Sequence[PhaseResult]) -> PhaseResult:
    """One phase from its parts: records in send order, the window from the first send to
    the last end, health summed (requests in flight) or worst (everything else)."""
    records = sorted((r for ph in phases for r in ph.records),
                     key=lambda r: r.send_ts if math.isfinite(r.send_ts) else math.inf)
    start = min(ph.start_ts for ph in phases)
    end = max(ph.end_ts for ph in phases)
    wall = min(ph.start_wall for ph in phases)
    health = merge_health([ph.health for ph in phases])
    # In flight over the merged window, from the requests themselves: each process's own
    # mean is over its own probe's span, which the others' start and end do not share.
    busy = sum(r.end_ts - r.issue_ts for r in records
               if math.isfinite(r.end_ts) and math.isfinite(r.issue_ts))
    if end > start:
        health.inflight_mean = busy / (end - start)
    return PhaseResult(records, start, end, wall, health)


def merge_health(parts: Sequence[ClientHealth],
                 names: Sequence[str] | None = None) -> ClientHealth:
    """Each process is judged on its own core: the worst of them is the point's client.
    `names` label each part's reasons (default "client process i")."""
    h = ClientHealth()
    for name in ("lag_p50_ms", "lag_p99_ms", "lag_max_ms", "stamp_err_p99_ms",
                 "stamp_err_p999_ms", "stamp_probe_p99_ms", "pass_offset_p99_ms", "cpu_share",
                 "queue_delay_p50_ms", "queue_delay_p99_ms", "queue_delay_max_ms",
                 "stall_share"):
        vals = [getattr(p, name) for p in parts if not math.isnan(getattr(p, name))]
        setattr(h, name, max(vals) if vals else math.nan)
    h.inflight_mean = sum(p.inflight_mean for p in parts if not math.isnan(p.inflight_mean))
    h.cpu_cores = sum(p.cpu_cores for p in parts if not math.isnan(p.cpu_cores))
    h.stamp_probe_samples = sum(p.stamp_probe_samples for p in parts)
    labels = names or [f"client process {i}" for i in range(len(parts))]
    h.reasons = [f"{label}: {why}" for label, p in zip(labels, parts, strict=True)
                 for why in p.reasons]
    h.bottleneck = any(p.bottleneck for p in parts)
    h.lag_samples = sorted(s for p in parts for s in p.lag_samples)
    return h


# ---- closed loop (fixed-sequence) --------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LoopPart:
    settings: ClientSettings
    specs: list[RequestSpec]
    concurrency: int


def split_closed_loop(specs: Sequence[RequestSpec], concurrency: int,
                      workers: int) -> list[tuple[list[RequestSpec], int]]:
    """(specs, slots) per process: slot s to process s mod N, spec j to slot j mod C."""
    workers = max(1, min(workers, concurrency))
    slots = [len(range(w, concurrency, workers)) for w in range(workers)]
    out: list[list[RequestSpec]] = [[] for _ in range(workers)]
    for j, spec in enumerate(specs):
        out[(j % concurrency) % workers].append(spec)
    return list(zip(out, slots, strict=True))


def _closed_loop_job(part: LoopPart) -> PhaseResult:
    from harness.client.closed_loop import run_closed_loop

    async def go() -> PhaseResult:
        async with StreamingClient(part.settings) as client:
            while (delay := shared_start() - time.perf_counter()) > 0:  # start together
                await asyncio.sleep(delay)
            return await run_closed_loop(client, part.specs, part.concurrency)

    return run_async(go())


def closed_loop_over_workers(settings: ClientSettings, specs: Sequence[RequestSpec],
                             concurrency: int, workers: int,
                             on_done: Callable[[RequestRecord], None] | None = None
                             ) -> PhaseResult:
    """The closed loop with its C slots split over `workers` processes."""
    one = replace(settings, workers=1)
    parts = [LoopPart(one, s, c) for s, c in split_closed_loop(specs, concurrency, workers)]
    merged = phases_over_workers(_closed_loop_job, parts, settings)
    if on_done is not None:
        for rec in merged.records:
            on_done(rec)
    return merged


# ---- timestamped replay ------------------------------------------------------------------
# (settings, schedule, t0, on_done) -> the phase: harness.workloads.timestamped.schedule_phase,
# passed in (a module-level function travels to the child by name) so that this module needs
# nothing of the workload's.
SchedulePhase = Callable[[ClientSettings, list[tuple[float, RequestSpec]], float, None],
                         Coroutine[Any, Any, PhaseResult]]


@dataclass(frozen=True, slots=True)
class SchedulePart:
    settings: ClientSettings
    schedule: list[tuple[float, RequestSpec]]
    phase: SchedulePhase


def _schedule_job(part: SchedulePart) -> PhaseResult:
    return run_async(part.phase(part.settings, part.schedule, shared_start(), None))


def schedule_over_workers(settings: ClientSettings, schedule: Sequence[tuple[float, RequestSpec]],
                          workers: int, phase: SchedulePhase,
                          on_done: Callable[[RequestRecord], None] | None = None
                          ) -> PhaseResult:
    """The open-loop schedule dealt round-robin over `workers` processes sharing one start
    instant (shared_start: set once every process has imported and reached the barrier)."""
    one = replace(settings, workers=1)
    parts = [SchedulePart(one, list(schedule[w::workers]), phase) for w in range(workers)]
    phases = run_partitioned(_schedule_job, parts,
                             [settings.api_key_env] if settings.api_key_env else [])
    merged = merge_phases(phases)
    merged.start_ts = phases[0].start_ts  # the shared instant, the same in every part
    if on_done is not None:
        for rec in merged.records:
            on_done(rec)
    return merged
