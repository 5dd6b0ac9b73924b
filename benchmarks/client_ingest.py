"""How many streamed chunks per second one client process ingests, and how exact its stamps are.

Load: `harness.testing.fast_sse_server`, a server that costs almost nothing, pinned to the other
core. Client: the harness's own `StreamingClient` and closed loop, pinned to one core (its stamp
probe's writer then runs on the other, harness.client.stamp_probe). For a
sample of requests the client keeps every read; the server stamps the first event of every write
with its send time (same CLOCK_MONOTONIC), so the timestamp error is measured, not estimated.

Prints one row per concurrency: chunks/s, reads/s, client CPU share, mean requests in flight
against the requested concurrency, and the timestamp error (client stamp - server send time).

Run: python benchmarks/client_ingest.py [--seconds 8] [--concurrency 32 64 128 256]
     [--transport aiohttp|httptools|httptools-python]
Reference points (one client core, measured by the project's authors): vllm bench serve ~205k
chunks/s, SGLang's Python client ~115k, AIPerf ~28k, SGLang's Rust client ~747k.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from typing import Any

import numpy as np
import orjson

from harness.client.closed_loop import run_closed_loop
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.client.workers import closed_loop_over_workers
from harness.records import RequestSpec
from harness.testing.spawn import spawn_server

_STAMP = re.compile(rb'"t":([0-9.]+)')


def _specs(n: int, max_tokens: int, sample_every: int, lockstep: bool) -> list[RequestSpec]:
    """Output lengths uniform in [0.8 L, L] as InferenceX draws them (or all L: lockstep)."""
    rng = np.random.default_rng(0)
    lengths = np.full(n, max_tokens) if lockstep else rng.integers(
        int(0.8 * max_tokens), max_tokens + 1, n)
    specs = []
    for i, osl in enumerate(lengths):
        body = orjson.dumps({"prompt": "x", "max_tokens": int(osl), "stream": True})
        specs.append(RequestSpec(f"r{i}", "/v1/completions", body, 1, int(osl),
                                 keep_raw=i % sample_every == 0))
    return specs


def _stamp_errors(records: list) -> np.ndarray:
    """Client read time minus server send time, for every stamped write in the sampled reads."""
    errs = []
    for r in records:
        for t, buf in r.raw_reads or ():
            errs.extend(t - float(m.group(1)) for m in _STAMP.finditer(buf))
    return np.asarray(errs) * 1000.0


# What --transport names: (client.transport, client.read_path). httptools-python is the
# httptools transport with its steady read in Python, not C (docs/client.md "The compiled read").
TRANSPORTS = {"aiohttp": ("aiohttp", "compiled"), "httptools": ("httptools", "compiled"),
              "httptools-python": ("httptools", "python")}


def _phase(concurrency: int, seconds: float, max_tokens: int, port: int, lockstep: bool,
           workers: int, request_s: float, transport: str) -> tuple[Any, float]:
    """The phase and the client's CPU seconds (its own, or its worker processes')."""
    kind, read_path = TRANSPORTS[transport]
    settings = ClientSettings(f"http://127.0.0.1:{port}", transport=kind, read_path=read_path)
    if workers > 1:  # a fixed number of requests (a deadline generator cannot be shipped)
        rounds = max(1, round(seconds / request_s))
        specs = _specs(concurrency * rounds, max_tokens, sample_every=50, lockstep=lockstep)
        phase = closed_loop_over_workers(settings, specs, concurrency, workers)
        return phase, phase.health.cpu_cores * phase.duration_s  # the processes' own CPU
    specs = _specs(20_000, max_tokens, sample_every=50, lockstep=lockstep)
    deadline = time.perf_counter() + seconds

    def timed():
        for s in specs:  # more than enough; the loop stops on time
            if time.perf_counter() > deadline:
                return
            yield s

    async def go():
        async with StreamingClient(settings) as c:
            return await run_closed_loop(c, timed(), concurrency)

    phase = run_async(go())
    return phase, phase.health.cpu_share * phase.duration_s


def run(concurrency: int, seconds: float, max_tokens: int, port: int,
        lockstep: bool = False, workers: int = 1, request_s: float = 1.0,
        transport: str = "aiohttp") -> dict[str, float]:
    phase, cpu_s = _phase(concurrency, seconds, max_tokens, port, lockstep, workers, request_s,
                          transport)
    chunks = sum(len(r.chunk_ts) for r in phase.records)
    failed = sum(not r.ok for r in phase.records)
    errs = _stamp_errors(phase.records)
    h = phase.health
    ids = [r.request_id for r in phase.records]
    return {
        "concurrency": concurrency,
        "chunks": chunks,
        "chunks_per_s": chunks / phase.duration_s,
        "per_core": chunks / cpu_s if cpu_s > 0 else float("nan"),
        "requests": len(phase.records),
        "duplicates": len(ids) - len(set(ids)),
        "failed": failed,
        "cpu_share": cpu_s / phase.duration_s,
        "inflight_mean": h.inflight_mean,
        "err_p50_ms": float(np.percentile(errs, 50)) if errs.size else float("nan"),
        "err_p99_ms": float(np.percentile(errs, 99)) if errs.size else float("nan"),
        "err_max_ms": float(errs.max()) if errs.size else float("nan"),
        "est_p99_ms": h.stamp_err_p99_ms,
        "probe_p99_ms": h.stamp_probe_p99_ms,
        "timer_p99_ms": h.stamp_timer_p99_ms,
        "bound_p99_ms": h.stamp_bound_p99_ms,
        "pass_p99_ms": h.pass_offset_p99_ms,
        "queue_p99_ms": h.queue_delay_p99_ms,
        "lag_max_ms": h.lag_max_ms,
        "flagged": h.bottleneck,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--concurrency", type=int, nargs="+", default=[32, 64, 128, 256])
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--events-per-tick", type=int, default=48)
    p.add_argument("--tick-ms", type=float, default=2.0)
    p.add_argument("--lockstep", action="store_true",
                   help="every request the same length, so all finish in the same instant")
    p.add_argument("--workers", type=int, default=1,
                   help="client processes (client.workers); > 1: a fixed request count")
    p.add_argument("--transport", choices=list(TRANSPORTS), default="aiohttp",
                   help="client.transport (and for httptools-python, client.read_path=python):"
                   " what reads the stream")
    # cpu and per core: the client processes' CPU seconds (each process's own process_time)
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server_env = {"FAST_SSE_CPU": str(cpus[-1])} if len(cpus) > 1 else {}
    if len(cpus) > 1 and a.workers == 1:
        os.sched_setaffinity(0, {cpus[0]})
    request_s = a.max_tokens / a.events_per_tick * a.tick_ms / 1000.0
    with spawn_server(
        "harness.testing.fast_sse_server",
        "--events-per-tick", str(a.events_per_tick), "--tick-ms", str(a.tick_ms),
        env=server_env,
    ) as port:
        print(f"{'conc':>5} {'chunks/s':>10} {'per core':>10} {'reqs':>6} {'dup':>3} {'fail':>4} "
              f"{'cpu':>5} {'inflight':>8} "
              f"{'err p50':>8} {'err p99':>8} {'err max':>8} {'est p99':>8} {'probe99':>8} "
              f"{'pass99':>8} {'timer99':>8} {'bound99':>8} {'queue99':>8} "
              f"{'lag max':>8} flag  (ms)")
        for c in a.concurrency:
            r = run(c, a.seconds, a.max_tokens, port, a.lockstep, a.workers, request_s,
                    a.transport)
            print(f"{c:>5} {r['chunks_per_s']:>10,.0f} {r['per_core']:>10,.0f} "
                  f"{r['requests']:>6} {r['duplicates']:>3} {r['failed']:>4} "
                  f"{r['cpu_share']:>5.2f} {r['inflight_mean']:>8.1f} {r['err_p50_ms']:>8.3f} "
                  f"{r['err_p99_ms']:>8.3f} {r['err_max_ms']:>8.3f} {r['est_p99_ms']:>8.3f} "
                  f"{r['probe_p99_ms']:>8.3f} {r['pass_p99_ms']:>8.3f} "
                  f"{r['timer_p99_ms']:>8.3f} {r['bound_p99_ms']:>8.3f} "
                  f"{r['queue_p99_ms']:>8.3f} {r['lag_max_ms']:>8.1f} {r['flagged']!s:>5}")


if __name__ == "__main__":
    main()
