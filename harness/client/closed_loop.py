"""The closed loop: C requests in flight until the specs run out (vLLM's semaphore loop).

The client only sends and stamps; this decides what goes out when. The measured window runs
from the first request's send to the last request's end, both stamped by the client on the
request itself, so nothing done after the last byte (a garbage collection, the health probe's
shutdown) is counted as serving time.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterable, Iterator

from harness.client.streaming import PhaseResult, StreamingClient
from harness.records import RequestRecord, RequestSpec


async def run_closed_loop(
    client: StreamingClient,
    specs: Iterable[RequestSpec],
    concurrency: int,
    on_done: Callable[[RequestRecord], None] | None = None,
) -> PhaseResult:
    """Keep `concurrency` requests in flight until `specs` is exhausted."""
    it = iter(specs)
    records: list[RequestRecord] = []
    probe = client.health_probe()

    async def worker() -> None:
        for spec in it:  # the shared iterator hands each spec to exactly one worker
            rec = await client.send(spec)
            records.append(rec)
            if on_done is not None:
                on_done(rec)

    probe.start()
    start_wall = time.time()
    start = time.perf_counter()
    with gc_paused():
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        end = time.perf_counter()  # before gc_paused's full collection, which takes ~0.1 s
        # The probe's wall (its CPU share and mean in flight) ends here too: in a process
        # holding many objects that collection took ~0.3 s, and c8 read as 6.5 in flight.
        health = await probe.stop()
    sends = [r.send_ts for r in records if not math.isnan(r.send_ts)]
    ends = [r.end_ts for r in records if not math.isnan(r.end_ts)]
    start = min(sends, default=start)
    end = max(ends, default=end)
    return PhaseResult(records, start, end, start_wall, health)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while measuring: a full collection over thousands of
    records stalls the loop for a millisecond or more, exactly when chunks are arriving. The
    records hold no cycles; what aiohttp leaves is collected when the phase ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()
