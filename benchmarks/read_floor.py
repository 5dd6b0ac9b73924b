"""What one read costs a Python client that does nothing with it: the floor under ingest.

Issue 10 asks for >= 1M chunks per client core-second with one SSE event per server write. At
realistic pacing every event is its own socket read (a stream gets its next event long after
the client took the last), so a chunk costs a read. This client is as lean as asyncio allows:
uvloop, raw `asyncio.Protocol`s on keep-alive connections, one stamp and one `bytes.count` per
read, no HTTP parsing, no records. It measures the same server and shape as
benchmarks/client_ingest.py (harness.testing.fast_sse_server, one event per write every
`--tick-ms`, server pinned to the other core), so its chunks per core-second bound from above
what any client written on this event loop can reach there; the harness client's figure is
printed beside it.

The floor and the harness client over each `client.transport` are alternated `--rounds` times
on one server shape, so a noisy host shifts them alike; the ratios' medians are printed.

Run: python benchmarks/read_floor.py [--streams 64 256] [--seconds 5] [--tick-ms 2]
     [--transports aiohttp httptools] [--rounds 3]
Last lines, for scripts: `read_floor streams=N aiohttp_pct=X httptools_pct=Y` (of the floor).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import time

import numpy as np
import uvloop

from harness.testing.spawn import spawn_server

_STAMP = re.compile(rb'"t":([0-9.]+)')
_BODY = b'{"prompt":"x","max_tokens":100000000,"stream":true}'
_REQUEST = (b"POST /v1/completions HTTP/1.1\r\nHost: bench\r\nContent-Length: %d\r\n\r\n%s"
            % (len(_BODY), _BODY))


class _Lean(asyncio.Protocol):
    """Counts events and reads; keeps the stamp error of one read in 97."""

    def __init__(self, totals: list[int], errors: list[float]) -> None:
        self.totals, self.errors = totals, errors

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(_REQUEST)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        t = time.perf_counter()
        totals = self.totals
        totals[0] += data.count(b"\n\n")
        totals[1] += 1
        if totals[1] % 97 == 0 and (m := _STAMP.search(data)):
            self.errors.append(t - float(m.group(1)))


async def _lean(port: int, streams: int, seconds: float) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    totals, errors = [0, 0], []
    conns = [await loop.create_connection(lambda: _Lean(totals, errors), "127.0.0.1", port)
             for _ in range(streams)]
    await asyncio.sleep(1.0)  # every stream streaming
    errors.clear()
    c0, r0, cpu0, w0 = totals[0], totals[1], time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    chunks, reads = totals[0] - c0, totals[1] - r0
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - w0
    for transport, _ in conns:
        transport.close()
    e = np.asarray(errors) * 1000.0
    return {"chunks_per_s": chunks / wall, "reads_per_s": reads / wall, "cpu": cpu / wall,
            "per_core": chunks / cpu, "err_p99_ms": float(np.percentile(e, 99))}


def _harness(n: int, a: argparse.Namespace, env: dict[str, str],
             transport: str) -> dict[str, float]:
    import client_ingest  # the harness client on the same server and shape

    with spawn_server("harness.testing.fast_sse_server", "--events-per-tick", "1",
                      "--tick-ms", str(a.tick_ms), env=env) as port:
        max_tokens = int(a.seconds * 1000 / a.tick_ms / 4)  # four rounds of requests
        return client_ingest.run(n, a.seconds, max_tokens, port, request_s=a.seconds / 4,
                                 transport=transport)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--streams", type=int, nargs="+", default=[64, 256])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--tick-ms", type=float, default=2.0)
    p.add_argument("--transports", nargs="+", default=["aiohttp", "httptools"],
                   choices=["aiohttp", "httptools"], help="client.transport values measured")
    p.add_argument("--rounds", type=int, default=1,
                   help="floor and each transport alternated this many times; medians printed")
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    env = {"FAST_SSE_CPU": str(cpus[-1])} if len(cpus) > 1 else {}
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[0]})
    cols = "".join(f" {t + ' %':>12} {'err99':>6} {'bound':>6}" for t in a.transports)
    print(f"{'streams':>7} {'round':>5} {'floor/core':>10} {'err99':>6}{cols}  (ms; % of floor)")
    last = ""
    for n in a.streams:
        ratios: dict[str, list[float]] = {t: [] for t in a.transports}
        for k in range(a.rounds):
            with spawn_server("harness.testing.fast_sse_server", "--events-per-tick", "1",
                              "--tick-ms", str(a.tick_ms), env=env) as port:
                r = uvloop.run(_lean(port, n, a.seconds))
            row = f"{n:>7} {k:>5} {r['per_core']:>10,.0f} {r['err_p99_ms']:>6.2f}"
            for t in a.transports:
                h = _harness(n, a, env, t)
                ratios[t].append(h["per_core"] / r["per_core"])
                row += (f" {h['per_core']:>6,.0f} {100 * ratios[t][-1]:>4.0f}%"
                        f" {h['err_p99_ms']:>6.2f} {h['est_p99_ms']:>6.2f}")
            print(row, flush=True)
        med = " ".join(f"{t}={100 * float(np.median(v)):.0f}%" for t, v in ratios.items())
        print(f"{n:>7} median of {a.rounds}: {med}", flush=True)
        last += f"read_floor streams={n} " + " ".join(
            f"{t}_pct={100 * float(np.median(v)):.1f}" for t, v in ratios.items()) + "\n"
    print(last, end="")


if __name__ == "__main__":
    main()
