"""How the client's ingest scales with `client.workers`: chunks per second and per client core
for workers = 1..N, and what each added core brought.

Load: `harness.testing.fast_sse_server` pinned to the host's last core (it costs per write, not
per event, so at 48 events per write one server core feeds many client cores); the client
processes (harness.client.workers, the closed loop's slots split over them) run on the other
cores, `--per-worker` streams each, so the offered load grows with the workers. The offered
rate is printed beside the achieved one: a row that falls short of it while its workers are
not busy is the server's limit, not the client's.

Columns: chunks/s; client cores used (the processes' own CPU seconds over the phase); chunks per
client core-second; speedup over one worker; efficiency (speedup / workers); and the marginal
gain of the last added worker, as a share of what one worker did.

Run: python benchmarks/client_scaling.py [--max-workers N] [--per-worker 16] [--seconds 8]
     [--events-per-tick 48] [--transport aiohttp|httptools]
N defaults to the cores left after the server's (1 on a 2-core host: nothing to scale; give
--max-workers to oversubscribe, which measures contention, not scaling). On a bigger host, run
it there from a checkout with the project's environment (`make venv` or `pip install -e .`),
ideally on an otherwise idle machine: `python benchmarks/client_scaling.py --max-workers 8`.
"""

from __future__ import annotations

import argparse
import os

from harness.testing.spawn import spawn_server


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--max-workers", type=int, default=0, help="0: every core but the server's")
    p.add_argument("--per-worker", type=int, default=16, help="streams per client process")
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--events-per-tick", type=int, default=48)
    p.add_argument("--tick-ms", type=float, default=2.0)
    p.add_argument("--transport", choices=["aiohttp", "httptools"], default="aiohttp")
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server_env = {"FAST_SSE_CPU": str(cpus[-1])} if len(cpus) > 1 else {}
    if len(cpus) > 1:  # the client processes (forked later) inherit the other cores
        os.sched_setaffinity(0, set(cpus[:-1]))
    top = a.max_workers or max(1, len(cpus) - 1)
    import client_ingest  # after the affinity is set: it starts nothing on import

    request_s = a.max_tokens / a.events_per_tick * a.tick_ms / 1000.0
    print(f"host: {os.cpu_count()} cores, {len(cpus)} usable; server on core {cpus[-1]}; "
          f"transport {a.transport}; {a.per_worker} streams per worker, "
          f"{a.events_per_tick} events per write every {a.tick_ms:g} ms")
    print(f"{'workers':>7} {'offered/s':>10} {'chunks/s':>10} {'cores':>6} {'per core':>10} "
          f"{'speedup':>7} {'effic.':>6} {'marginal':>8} {'fail':>4} {'err p99':>8}")
    base = prev = 0.0
    with spawn_server("harness.testing.fast_sse_server", "--events-per-tick",
                      str(a.events_per_tick), "--tick-ms", str(a.tick_ms),
                      env=server_env) as port:
        for w in range(1, top + 1):
            conc = a.per_worker * w
            r = client_ingest.run(conc, a.seconds, a.max_tokens, port, workers=w,
                                  request_s=request_s, transport=a.transport)
            rate = r["chunks_per_s"]
            base = base or rate
            offered = conc * a.events_per_tick * 1000.0 / a.tick_ms
            speedup = rate / base
            marginal = (rate - prev) / base if w > 1 else 1.0
            prev = rate
            print(f"{w:>7} {offered:>10,.0f} {rate:>10,.0f} {r['cpu_share']:>6.2f} "
                  f"{r['per_core']:>10,.0f} {speedup:>7.2f} {speedup / w:>6.2f} "
                  f"{marginal:>8.2f} {r['failed']:>4} {r['err_p99_ms']:>8.2f}", flush=True)
            print(f"client_scaling workers={w} chunks_per_s={rate:.0f} "
                  f"per_core={r['per_core']:.0f} efficiency={speedup / w:.3f}", flush=True)


if __name__ == "__main__":
    main()
