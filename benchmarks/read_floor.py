"""What one read costs a Python client that does nothing with it: the floor under ingest.

The target is >= 1M chunks per client core-second with one SSE event per server write. At
realistic pacing every event is its own socket read (a stream gets its next event long after
the client took the last), so a chunk costs a read. This client is as lean as asyncio allows:
uvloop, raw `asyncio.Protocol`s on keep-alive connections, one stamp and one `bytes.count` per
read, no HTTP parsing, no records. It measures the same server and shape as
benchmarks/client_ingest.py (harness.testing.fast_sse_server, one event per write every
`--tick-ms`, server pinned to the other core), so its chunks per core-second bound from above
what any client written on this event loop can reach there; the harness client's figure is
printed beside it.

Like for like, down to TCP: each lean connection sends the harness's closed loop's requests
(the same lengths, uniform in [0.8 L, L] from the same seed) and sends the next on the same
connection when one ends, as the harness's keep-alive pool does. A connection that only ever
sent one request stays in Linux's quick-ACK mode and acknowledges every data segment; one that
answers each reply with its next request is in ping-pong mode and acknowledges every other. On
loopback an ACK's cost (its send, and the server socket's receive path, run inline) lands on
the client's core: a floor of one endless request per connection paid ~1.5 us a read the
harness did not, and read ~15 % low (docs/client.md, "The floor, like for like"). Each client's
ACKs per chunk are printed (`ack/ch`, from the host's TCP counters: segments sent in its window
less one per chunk the server sent), so a comparison that is not like for like shows.

The floor and the harness client over each `client.transport` are alternated `--rounds` times
on one server shape, so a noisy host shifts them alike; the ratios' medians are printed.

Run: python benchmarks/read_floor.py [--streams 64 256] [--seconds 5] [--tick-ms 2]
     [--transports aiohttp httptools httptools-python] [--rounds 3]
Last lines, for scripts: `read_floor streams=N aiohttp_pct=X httptools_pct=Y` (of the floor).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import time
from collections.abc import Iterator

import numpy as np
import uvloop

from harness.testing.spawn import spawn_server

_STAMP = re.compile(rb'"t":([0-9.]+)')


def _tcp_segments_out() -> int | None:
    """The host's TCP segments sent so far (/proc/net/snmp `Tcp: OutSegs`); None off Linux."""
    try:
        with open("/proc/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith("Tcp:")]
        return int(rows[1][rows[0].index("OutSegs")])
    except (OSError, ValueError, IndexError):
        return None


def _acks_per_chunk(out0: int | None, chunks: float) -> float:
    """Segments sent over a window, less the server's (one write, one segment, per chunk at one
    event per write), per chunk: the client's ACKs, and its few requests."""
    out1 = _tcp_segments_out()
    if out0 is None or out1 is None or chunks <= 0:
        return float("nan")
    return (out1 - out0 - chunks) / chunks


def _request(max_tokens: int) -> bytes:
    body = b'{"prompt":"x","max_tokens":%d,"stream":true}' % max_tokens
    return (b"POST /v1/completions HTTP/1.1\r\nHost: bench\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body))


class _Lean(asyncio.Protocol):
    """Counts events and reads; keeps the stamp error of one read in 97; sends the next request
    on the same connection once a reply's events are all in."""

    def __init__(self, totals: list[int], errors: list[float], lengths: Iterator[int]) -> None:
        self.totals, self.errors, self.lengths = totals, errors, lengths
        self.transport: asyncio.Transport | None = None
        self.left = 0  # events still to come in this reply

    def _next(self) -> None:
        n = next(self.lengths)
        self.left = n + 2  # n content events, then the usage event and [DONE]
        assert self.transport is not None
        self.transport.write(_request(n))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._next()

    def data_received(self, data: bytes) -> None:
        t = time.perf_counter()
        totals = self.totals
        n = data.count(b"\n\n")
        totals[0] += n
        totals[1] += 1
        if totals[1] % 97 == 0 and (m := _STAMP.search(data)):
            self.errors.append(t - float(m.group(1)))
        self.left -= n
        if self.left <= 0:  # "0\r\n\r\n" came in this write (fast_sse_server ends so)
            self._next()


def _lengths(max_tokens: int) -> Iterator[int]:
    """The output lengths benchmarks/client_ingest.py draws, in its order, without end."""
    rng = np.random.default_rng(0)
    while True:
        yield from (int(x) for x in rng.integers(int(0.8 * max_tokens), max_tokens + 1, 20_000))


async def _lean(port: int, streams: int, seconds: float, max_tokens: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    totals, errors = [0, 0], []
    lengths = _lengths(max_tokens)
    # Measured from before the first connect, as client_ingest measures the harness's whole
    # phase: each connection's first request, on a fresh connection not yet in ping-pong
    # mode, is in both windows.
    c0, r0, cpu0, w0 = totals[0], totals[1], time.process_time(), time.perf_counter()
    out0 = _tcp_segments_out()
    conns = [await loop.create_connection(lambda: _Lean(totals, errors, lengths),
                                          "127.0.0.1", port)
             for _ in range(streams)]
    await asyncio.sleep(seconds - (time.perf_counter() - w0))
    chunks, reads = totals[0] - c0, totals[1] - r0
    acks = _acks_per_chunk(out0, chunks)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - w0
    for transport, _ in conns:
        transport.close()
    e = np.asarray(errors) * 1000.0
    return {"chunks_per_s": chunks / wall, "reads_per_s": reads / wall, "cpu": cpu / wall,
            "per_core": chunks / cpu, "err_p99_ms": float(np.percentile(e, 99)),
            "acks_per_chunk": acks}


def _max_tokens(a: argparse.Namespace) -> int:
    return int(a.seconds * 1000 / a.tick_ms / 4)  # four rounds of requests in the harness's run


def _harness(n: int, a: argparse.Namespace, env: dict[str, str],
             transport: str) -> dict[str, float]:
    import client_ingest  # the harness client on the same server and shape

    with spawn_server("harness.testing.fast_sse_server", "--events-per-tick", "1",
                      "--tick-ms", str(a.tick_ms), env=env) as port:
        out0 = _tcp_segments_out()
        r = client_ingest.run(n, a.seconds, _max_tokens(a), port, request_s=a.seconds / 4,
                              transport=transport)
        r["acks_per_chunk"] = _acks_per_chunk(out0, r["chunks"])
        return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--streams", type=int, nargs="+", default=[64, 256])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--tick-ms", type=float, default=2.0)
    p.add_argument("--transports", nargs="+", default=["aiohttp", "httptools"],
                   choices=["aiohttp", "httptools", "httptools-python"],
                   help="client.transport values measured (httptools-python: httptools with "
                   "client.read_path=python)")
    p.add_argument("--rounds", type=int, default=1,
                   help="floor and each transport alternated this many times; medians printed")
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    env = {"FAST_SSE_CPU": str(cpus[-1])} if len(cpus) > 1 else {}
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[0]})
    cols = "".join(f" {t + ' %':>12} {'err99':>6} {'bound':>6} {'ack/ch':>6}"
                   for t in a.transports)
    print(f"{'streams':>7} {'round':>5} {'floor/core':>10} {'err99':>6} {'ack/ch':>6}{cols}"
          "  (ms; % of floor)")
    last = ""
    for n in a.streams:
        ratios: dict[str, list[float]] = {t: [] for t in a.transports}
        for k in range(a.rounds):
            with spawn_server("harness.testing.fast_sse_server", "--events-per-tick", "1",
                              "--tick-ms", str(a.tick_ms), env=env) as port:
                r = uvloop.run(_lean(port, n, a.seconds, _max_tokens(a)))
            row = (f"{n:>7} {k:>5} {r['per_core']:>10,.0f} {r['err_p99_ms']:>6.2f}"
                   f" {r['acks_per_chunk']:>6.2f}")
            for t in a.transports:
                h = _harness(n, a, env, t)
                ratios[t].append(h["per_core"] / r["per_core"])
                row += (f" {h['per_core']:>6,.0f} {100 * ratios[t][-1]:>4.0f}%"
                        f" {h['err_p99_ms']:>6.2f} {h['est_p99_ms']:>6.2f}"
                        f" {h['acks_per_chunk']:>6.2f}")
            print(row, flush=True)
        med = " ".join(f"{t}={100 * float(np.median(v)):.0f}%" for t, v in ratios.items())
        print(f"{n:>7} median of {a.rounds}: {med}", flush=True)
        last += f"read_floor streams={n} " + " ".join(
            f"{t}_pct={100 * float(np.median(v)):.1f}" for t, v in ratios.items()) + "\n"
    print(last, end="")


if __name__ == "__main__":
    main()
