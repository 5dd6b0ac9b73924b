"""A large phase ends at once with SIGINT at its default handler.

Python 3.11's asyncio.Runner formats repr(main task) on its way out when SIGINT has the
default handler (benchmarks/sigint_stall.py says why); a task whose result held every record
formatted all of them, for minutes after a 100k-record phase.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import orjson
import pytest

from harness.client.closed_loop import run_closed_loop
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.records import RequestRecord, RequestSpec
from harness.testing.spawn import spawn_server


class _ReprCounter:
    """A tag that counts how often something formats it (one per record formatted)."""

    calls = 0

    def __repr__(self) -> str:
        _ReprCounter.calls += 1
        return "tag"


@pytest.fixture(scope="module")
def fast_server() -> Iterator[str]:
    with spawn_server("harness.testing.fast_sse_server", "--events-per-tick", "4",
                      "--tick-ms", "1") as port:
        yield f"http://127.0.0.1:{port}"


def test_large_phase_ends_without_formatting_its_records(fast_server: str) -> None:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    body = orjson.dumps({"prompt": "x", "max_tokens": 4, "stream": True})
    tag = _ReprCounter()
    specs = [RequestSpec(f"r{i}", "/v1/completions", body, 1, 4, tags={"t": tag})
             for i in range(3000)]
    finished: list[float] = []

    async def phase():
        async with StreamingClient(ClientSettings(fast_server)) as c:
            result = await run_closed_loop(c, specs, 128)
        finished.append(time.perf_counter())
        return result

    _ReprCounter.calls = 0
    try:
        result = run_async(phase())
        stall = time.perf_counter() - finished[0]
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(result.records) == 3000 and all(r.ok for r in result.records)
    assert _ReprCounter.calls == 0, "records were formatted on the way out of the event loop"
    assert stall < 0.25, f"run_async took {stall:.3f} s to return after the phase ended"


def test_record_repr_is_bounded() -> None:
    """A record's repr never formats its stamps or tags, whatever their size."""
    rec = RequestRecord("r1", "measured", 10, 4, chunk_ts=list(range(100_000)),
                        tags={"t": _ReprCounter()}, error="x" * 1000)
    _ReprCounter.calls = 0
    text = repr(rec)
    assert len(text) < 200 and "chunks=100000" in text and _ReprCounter.calls == 0


def test_run_async_never_formats_its_result() -> None:
    """Whatever a phase returns (records, or an object whose repr is expensive) is not
    formatted by the event loop's exit, with SIGINT at its default handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    async def main() -> _ReprCounter:
        return _ReprCounter()

    _ReprCounter.calls = 0
    try:
        out = run_async(main())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert isinstance(out, _ReprCounter) and _ReprCounter.calls == 0
