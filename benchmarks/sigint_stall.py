"""Reproduce the end-of-phase stall as a user would hit it.

A phase of many requests against the zero-cost server, run the way a sweep runs one: through
`harness.client.streaming.run_async` from a
terminal, SIGINT at Python's default handler. Python 3.11's
`asyncio.Runner.run` swaps its own SIGINT handler (a partial holding the main task) in and out;
`signal.signal`/`getsignal` then try `Handlers(previous)`, whose ValueError message formats
repr(partial) -> repr(task) -> repr(the task's result): every RequestRecord of the phase, twice.

Prints how long the phase took and how long run_async took to return after the phase's
coroutine finished (the stall). `--unfixed` runs it as before the fix (the coroutine straight
into uvloop.run, records with the dataclass's full repr) to show the stall itself.

Run: python benchmarks/sigint_stall.py [--requests 100000] [--concurrency 256] [--unfixed]
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import time
from typing import Any

import orjson

from harness.client.closed_loop import run_closed_loop
from harness.client.streaming import ClientSettings, PhaseResult, StreamingClient, run_async
from harness.records import RequestRecord, RequestSpec
from harness.testing.spawn import spawn_server


def specs(n: int, max_tokens: int) -> list[RequestSpec]:
    body = orjson.dumps({"prompt": "x", "max_tokens": max_tokens, "stream": True})
    return [RequestSpec(f"r{i}", "/v1/completions", body, 1, max_tokens,
                        tags={"lane": i % 64, "turn": i}) for i in range(n)]


def _unfixed_run(coro: Any) -> Any:
    """run_async as it was: the phase's result is the main task's result."""
    import uvloop

    RequestRecord.__repr__ = _full_repr  # type: ignore[method-assign]
    PhaseResult.__repr__ = _full_repr  # type: ignore[method-assign]
    return uvloop.run(coro)


def _full_repr(self: Any) -> str:  # what @dataclass generated before the fix
    fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
    return f"{type(self).__name__}({fields})"


def measure(port: int, n: int, concurrency: int, max_tokens: int,
            unfixed: bool = False) -> dict[str, float]:
    """One phase; the seconds from its coroutine's end to run_async's return."""
    done_at: list[float] = []

    async def phase():
        async with StreamingClient(ClientSettings(f"http://127.0.0.1:{port}")) as c:
            result = await run_closed_loop(c, specs(n, max_tokens), concurrency)
        done_at.append(time.perf_counter())
        return result

    t0 = time.perf_counter()
    result = (_unfixed_run if unfixed else run_async)(phase())
    t1 = time.perf_counter()
    return {"records": len(result.records), "phase_s": done_at[0] - t0,
            "stall_s": t1 - done_at[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--requests", type=int, default=100_000)
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--max-tokens", type=int, default=4)
    p.add_argument("--unfixed", action="store_true", help="as before the fix")
    a = p.parse_args()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "run from a terminal"
    with spawn_server("harness.testing.fast_sse_server", "--events-per-tick", "4",
                      "--tick-ms", "1") as port:
        r = measure(port, a.requests, a.concurrency, a.max_tokens, a.unfixed)
    print(f"sigint_stall records={r['records']} phase_s={r['phase_s']:.2f} "
          f"stall_s={r['stall_s']:.3f}")


if __name__ == "__main__":
    main()
