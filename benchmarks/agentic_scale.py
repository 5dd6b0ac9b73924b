"""What the client costs to build and send AgentX-sized agentic turns at many lanes.

Load: `harness.testing.sink_server`, which takes bodies of any size and answers at once, so
everything measured is the client's. Each lane replays a generated session with the AgentX
length distribution (benchmarks/agentx_sessions.py: input tokens lognormal with p50 95k and
p99 506k, capped at 1M; 64-token blocks; a history that grows every turn by a tool result and
the recorded reply): a few turns of history before its start point, a primer (the whole
history, built from nothing: warmup, as AIPerf's primers), then measured turns, each due an
exponential think time after the previous reply (mean `lanes / turns-per-s`), its body built
BUILD_LEAD_S (10 ms) before that as the Replayer builds it (docs/replay.md, "Idle"). Bodies
are the harness's own (AgenticBodies, chat, with the cache-bust marker), sent by its own client
(StreamingClient).

Prints per phase: turns, turns/s, input tokens/s, bytes/s sent, client CPU (ms per turn, per
100k tokens, share of a core, and the body builder's part), RSS, and the delay between a
turn's due time and its body reaching the socket (p50/p99/max). Last line, for scripts:
`agentic_scale lanes=N rss_mb=X cpu_ms_per_100k=Y send_delay_p99_ms=Z` (the measured phase;
` workers=W` appended when W > 1).

`--workers N` (N > 1) splits the client over N processes as `client.workers=N` does, as
`--split` says (`client.agentic_workers`): `scheduler` (default) sends through
harness.client.pool (lanes and bodies here, the HTTP work in N processes, lane mod N; the send
delay includes the hand-off); `lanes` splits the lanes (lane mod N, as
harness.workloads.replay_split): each process builds and sends its own, the primers' end is
one barrier over all and the measured phase starts at one instant. CPU and RSS peaks are
summed over every process (the pool's from /proc: not ours for RUSAGE_CHILDREN).

Run: .venv/bin/python -m benchmarks.agentic_scale --lanes 1000 [--seconds 30] [--turns-per-s 50]
     [--workers 2 [--split lanes]]
Targets: 1,000 lanes, RSS <= 2 GB, <= 20 ms client CPU per 100k-token turn, p99
send delay <= 5 ms while the client uses under 80% of a core. With `--workers 2 --split
lanes` at 1,000 lanes, due->send p99 no worse than one worker.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import math
import os
import resource
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.agentx_sessions import Lane, make_lane
from harness.client.pool import ClientPool
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.client.workers import process_context, run_partitioned
from harness.config.compose import compose_sweep
from harness.records import RequestSpec
from harness.testing.spawn import spawn_server
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay import BUILD_LEAD_S
from harness.workloads.tokenizer import load_tokenizer
from harness.workloads.traces.model import TraceRequest


@dataclass
class Phase:
    name: str
    turns: int = 0
    tokens: int = 0
    bytes: int = 0
    build_cpu: float = 0.0
    build_max: float = 0.0  # the longest body build, wall (it holds the event loop)
    delays: list[float] = field(default_factory=list)  # due -> body on the socket
    issue: list[float] = field(default_factory=list)  # due -> the client starts the request
    wake: list[float] = field(default_factory=list)  # due -> the send began (primers: built first)
    handoff: list[float] = field(default_factory=list)  # issue -> a worker process read it
    lags: list[float] = field(default_factory=list)  # event-loop lateness (lag probe)
    rss_peak: float = 0.0  # this process's resident memory, MB, sampled by the lag probe
    errors: int = 0
    error_text: str = ""
    t0: float = 0.0
    cpu0: float = 0.0
    wall: float = 0.0
    cpu: float = 0.0
    own_cpu: float = 0.0  # this process's part (scheduling, bodies, hand-off)
    own0: float = 0.0
    pids: list[int] = field(default_factory=list)  # the client's worker processes, if any

    def start(self) -> None:
        self.t0, self.cpu0, self.own0 = time.perf_counter(), cpu_s(self.pids), cpu_s([])

    def stop(self) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu = cpu_s(self.pids) - self.cpu0
        self.own_cpu = cpu_s([]) - self.own0


def cpu_s(pids: list[int]) -> float:
    """CPU seconds of this process and of the given others (utime + stime, /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = time.process_time()
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15)
    return out


async def _sleep_until(t: float) -> None:
    while (delay := t - time.perf_counter()) > 0:
        await asyncio.sleep(delay)


def _build(bodies: AgenticBodies, lane: Lane, r: TraceRequest, phase: Phase) -> RequestSpec:
    c0, w0 = time.thread_time(), time.perf_counter()
    spec = bodies.spec(r, lane.ctx, max_tokens=1)
    phase.build_cpu += time.thread_time() - c0
    phase.build_max = max(phase.build_max, time.perf_counter() - w0)
    return spec


async def _turn(client: StreamingClient, spec: RequestSpec, r: TraceRequest, due: float,
                phase: Phase) -> float:
    phase.wake.append(time.perf_counter() - due)
    rec = await client.send(spec)
    phase.turns += 1
    phase.tokens += r.in_tokens
    phase.bytes += len(spec.body)
    if not rec.ok:
        phase.errors += 1
        phase.error_text = rec.error or f"HTTP {rec.http_status}"
    phase.delays.append(rec.send_ts - due)
    phase.issue.append(rec.issue_ts - due)
    if "client_handoff_s" in rec.tags:  # --workers: the hand-off to the worker process
        phase.handoff.append(rec.tags["client_handoff_s"])
    return rec.end_ts


async def _lane(client, bodies, lane: Lane, warm: Phase, measured: Phase, spread_s: float,
                think_s: float, gate: asyncio.Event, deadline: list[float]) -> None:
    # Each body is built BUILD_LEAD_S before its due time, as the Replayer does, so what is
    # left at the due time is only the send (and memory holds only bodies due soon).
    due = time.perf_counter() + lane.rng.uniform(0, spread_s)
    await _sleep_until(due)
    await _turn(client, _build(bodies, lane, lane.chain[-1], warm), lane.chain[-1], due, warm)
    await gate.wait()
    due = time.perf_counter() + lane.rng.exponential(think_s)
    while True:
        await _sleep_until(min(due - BUILD_LEAD_S, deadline[0]))
        if due >= deadline[0]:
            return
        r = lane.next_turn()
        spec = _build(bodies, lane, r, measured)
        await _sleep_until(due)
        end = await _turn(client, spec, r, due, measured)
        del spec  # not held through the next think time (1000 lanes: ~700 MB)
        due = end + lane.rng.exponential(think_s)


async def _lag_probe(phases: list[Phase], stop: asyncio.Event) -> None:
    """How late a 5 ms sleep wakes: the delay no client work of ours explains (a busy
    loop, or a machine that did not run us); and, every 20th wake, resident memory."""
    n = 0
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.005)
        p = phases[-1] if phases[-1].t0 else phases[0]
        p.lags.append(time.perf_counter() - t - 0.005)
        n += 1
        if n % 20 == 0:
            p.rss_peak = max(p.rss_peak, rss_mb()[0])


async def run(url: str, lanes: list[Lane], bodies: AgenticBodies, seconds: float,
              think_s: float, spread_s: float, workers: int = 1,
              gate_all: Callable[[], Awaitable[float]] | None = None
              ) -> tuple[Phase, Phase, float]:
    """The primers, then the measured phase; and the worker processes' summed peak RSS.
    gate_all: the measured phase's start instant once every process's primers are done
    (--split lanes)."""
    warm, measured = Phase("primers"), Phase("measured")
    gate, deadline = asyncio.Event(), [math.inf]
    stop = asyncio.Event()
    probe = asyncio.create_task(_lag_probe([warm, measured], stop))
    settings = ClientSettings(url)
    async with (ClientPool(settings, workers) if workers > 1
                else StreamingClient(settings)) as client:
        pids = client.pids if isinstance(client, ClientPool) else []
        warm.pids = measured.pids = pids
        warm.start()
        tasks = [asyncio.create_task(_lane(client, bodies, ln, warm, measured, spread_s, think_s,
                                           gate, deadline)) for ln in lanes]
        while warm.turns < len(lanes):
            await asyncio.sleep(0.05)
        warm.stop()
        if gate_all is not None:
            await _sleep_until(await gate_all())
        measured.start()
        deadline[0] = measured.t0 + seconds
        gate.set()
        await asyncio.gather(*tasks)
        measured.stop()
        workers_peak = sum(rss_mb(pid)[1] for pid in pids)
    stop.set()
    await probe
    return warm, measured, workers_peak


@dataclass
class LanesPart:
    """One process's lanes (--split lanes), and the barrier every process's primers end at."""

    url: str
    lane_ids: list[int]
    seed: int
    seconds: float
    think_s: float
    spread_s: float
    gate: Any  # a Barrier over the processes; its action sets `start`
    start: Any  # the measured phase's start instant (perf_counter, one clock on the host)


def _start_soon(value: Any) -> None:  # the barrier's action, run once by the last to arrive
    value.value = time.perf_counter() + 0.05


def make_bodies(seed: int) -> AgenticBodies:
    tokenizer = load_tokenizer(compose_sweep([]).model)
    return AgenticBodies(BlockPrompts(tokenizer, seed), {"model": "m", "stream": True,
                         "stream_options": {"include_usage": True}}, 0, "chat")


def _lanes_job(part: LanesPart) -> tuple[Phase, Phase, float]:
    bodies = make_bodies(part.seed)
    lanes = [make_lane(i, part.seed) for i in part.lane_ids]

    async def gate_all() -> float:  # waited in a thread: this loop goes on serving
        await asyncio.get_running_loop().run_in_executor(None, part.gate.wait, 600.0)
        return part.start.value

    warm, measured, _ = run_async(run(part.url, lanes, bodies, part.seconds, part.think_s,
                                      part.spread_s, 1, gate_all))
    return warm, measured, rss_mb()[1]


def run_lanes(url: str, n: int, seed: int, seconds: float, think_s: float, spread_s: float,
              workers: int) -> tuple[Phase, Phase, float]:
    """--split lanes: lane i in process i mod N, each with its own bodies and client; the
    phases merged (turns and CPU summed, delays pooled, RSS peaks summed)."""
    ctx = process_context()
    start = ctx.Value("d", math.nan)
    gate = ctx.Barrier(workers, action=functools.partial(_start_soon, start))
    parts = [LanesPart(url, list(range(w, n, workers)), seed, seconds, think_s, spread_s,
                       gate, start) for w in range(workers)]
    got = run_partitioned(_lanes_job, parts)
    return merge(p[0] for p in got), merge(p[1] for p in got), sum(p[2] for p in got)


def merge(phases: Any) -> Phase:
    out, summed = Phase(""), ("turns", "tokens", "bytes", "build_cpu", "errors", "cpu",
                              "own_cpu", "rss_peak", "delays", "issue", "wake", "handoff", "lags")
    for p in phases:
        for f in summed:  # numbers added, lists joined
            setattr(out, f, getattr(out, f) + getattr(p, f))
        out.name, out.error_text = p.name, out.error_text or p.error_text
        out.build_max, out.wall = max(out.build_max, p.build_max), max(out.wall, p.wall)
    return out


def rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(now, peak) resident memory of a process (this one by default), MB."""
    with open(f"/proc/{pid}/status") as f:
        kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in f)
              if k in ("VmRSS", "VmHWM")}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss if pid == "self" else kb["VmHWM"]
    return kb["VmRSS"] / 1024, peak / 1024


def report(p: Phase) -> dict[str, float]:
    d = np.asarray(p.delays) * 1e3 if p.delays else np.zeros(1)
    q = np.asarray(p.issue) * 1e3 if p.issue else np.zeros(1)
    w = np.asarray(p.wake) * 1e3 if p.wake else np.zeros(1)
    per_100k = p.cpu * 1e3 / (p.tokens / 1e5) if p.tokens else math.nan
    row = {"turns": p.turns, "turns_s": p.turns / p.wall, "tokens_s": p.tokens / p.wall,
           "mb_s": p.bytes / p.wall / 1e6, "cpu_ms_turn": p.cpu * 1e3 / max(p.turns, 1),
           "cpu_ms_per_100k": per_100k, "cpu_share": p.cpu / p.wall,
           "build_ms_per_100k": p.build_cpu * 1e3 / (p.tokens / 1e5) if p.tokens else math.nan,
           "delay_p50_ms": float(np.percentile(d, 50)),
           "delay_p99_ms": float(np.percentile(d, 99)), "delay_max_ms": float(d.max()),
           "issue_p99_ms": float(np.percentile(q, 99)),
           "wake_p99_ms": float(np.percentile(w, 99)),
           "lag_p99_ms": float(np.percentile(p.lags, 99) * 1e3) if p.lags else math.nan,
           "errors": p.errors}
    print(f"{p.name:>9}: {p.turns} turns in {p.wall:.1f} s ({row['turns_s']:.1f}/s), "
          f"{row['tokens_s'] / 1e6:.2f}M tokens/s, {row['mb_s']:.0f} MB/s; client CPU "
          f"{row['cpu_ms_turn']:.2f} ms/turn = {per_100k:.2f} ms per 100k tokens "
          f"({row['cpu_share']:.0%} of a core; building bodies {row['build_ms_per_100k']:.2f} "
          f"ms per 100k); due->send p50 {row['delay_p50_ms']:.2f} ms, p99 "
          f"{row['delay_p99_ms']:.2f} ms, max {row['delay_max_ms']:.1f} ms (due->woke p99 "
          f"{row['wake_p99_ms']:.2f} ms, due->issue p99 {row['issue_p99_ms']:.2f} ms; loop lag "
          f"p99 {row['lag_p99_ms']:.2f} ms); errors "
          f"{p.errors} {p.error_text[:200]}; longest build {p.build_max * 1e3:.1f} ms; RSS "
          f"up to {p.rss_peak:.0f} MB")
    if p.handoff:
        h = np.asarray(p.handoff) * 1e3
        row["handoff_p99_ms"] = float(np.percentile(h, 99))
        print(f"{'':>9}  hand-off to the worker p50 {np.percentile(h, 50):.2f} ms, p99 "
              f"{row['handoff_p99_ms']:.2f} ms, max {h.max():.1f} ms (in due->send); this "
              f"process {p.own_cpu * 1e3 / max(p.turns, 1):.2f} ms/turn "
              f"({p.own_cpu / p.wall:.0%} of a core), the workers "
              f"{(p.cpu - p.own_cpu) * 1e3 / max(p.turns, 1):.2f} ms/turn")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=30.0, help="measured phase")
    ap.add_argument("--turns-per-s", type=float, default=50.0, help="all lanes together")
    ap.add_argument("--spread-s", type=float, default=20.0, help="primers spread over this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1,
                    help="client processes (as client.workers=N)")
    ap.add_argument("--split", choices=("scheduler", "lanes"), default="scheduler",
                    help="with --workers: one scheduler and the HTTP work over the processes "
                    "(harness.client.pool), or the lanes themselves (client.agentic_workers)")
    a = ap.parse_args()
    bodies = make_bodies(a.seed)
    lanes = [make_lane(i, a.seed) for i in range(a.lanes)]
    inputs = np.array([ln.chain[-1].in_tokens for ln in lanes])
    print(f"{a.lanes} lanes; primer input tokens p50 {np.percentile(inputs, 50):,.0f}, "
          f"p99 {np.percentile(inputs, 99):,.0f}, max {inputs.max():,}; RSS before "
          f"{rss_mb()[0]:.0f} MB")
    split = a.workers > 1 and a.split == "lanes"
    with spawn_server("harness.testing.sink_server") as port:
        url = f"http://127.0.0.1:{port}"
        if split:  # the lanes are rebuilt in their processes; this one only waits
            del lanes
            warm, measured, workers_peak = run_lanes(url, a.lanes, a.seed, a.seconds,
                                                     a.lanes / a.turns_per_s, a.spread_s,
                                                     a.workers)
        else:
            warm, measured, workers_peak = run_async(run(
                url, lanes, bodies, a.seconds, a.lanes / a.turns_per_s, a.spread_s,
                a.workers))
    report(warm)
    row = report(measured)
    now, own_peak = rss_mb()
    peak = own_peak + workers_peak
    print(f"RSS now {now:.0f} MB, peak {own_peak:.0f} MB (+ {workers_peak:.0f} MB over "
          f"{a.workers if a.workers > 1 else 0} worker processes = {peak:.0f} MB); blocks "
          f"generated {'in the lanes processes' if split else f'{bodies.generated_blocks:,}'}")
    print(f"agentic_scale lanes={a.lanes} rss_mb={peak:.0f} "
          f"cpu_ms_per_100k={row['cpu_ms_per_100k']:.2f} "
          f"send_delay_p99_ms={row['delay_p99_ms']:.2f}"
          + (f" workers={a.workers}" if a.workers > 1 else "")
          + (" split=lanes" if split else ""))


if __name__ == "__main__":
    main()
