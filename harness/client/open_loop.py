"""Open-loop arrivals: requests sent at drawn times whatever the server is doing, optionally
under a cap on requests in flight (vLLM's `--request-rate`, `--burstiness`,
`--max-concurrency`; docs/slo.md).

The schedule follows vllm/benchmarks/serve.py@def9ce85 (`get_request`): every gap is drawn
from a gamma distribution of shape `burstiness` and scale 1 / (rate x burstiness) (shape 1 is
a Poisson process; `constant` is the limit of infinite burstiness, every gap 1 / rate); the
offsets are the running sum of the gaps, scaled so the last is exactly n / rate. Ours is drawn
from a seeded generator and recorded on each request (`scheduled_s`).

Each request records how late it went out (`send_lag_s`: issue time minus the later of its
scheduled time and the moment a slot under the cap freed), and, under a cap, how long it
waited for a slot (`cap_wait_s`): waiting for the cap is the load the user asked for; lateness
beyond it is the client falling behind, which invalidates the point.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from harness.client.closed_loop import gc_paused
from harness.client.streaming import PhaseResult, StreamingClient
from harness.records import RequestRecord, RequestSpec

ARRIVALS = ("poisson", "gamma", "constant")


def arrival_offsets(kind: str, rate: float, n: int, burstiness: float,
                    rng: np.random.Generator) -> np.ndarray:
    """n send offsets (s from the phase start) at `rate` req/s, vLLM's way."""
    if kind not in ARRIVALS:
        raise ValueError(f"unknown arrival {kind!r}; one of {ARRIVALS}")
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"request rate must be positive and finite, got {rate}")
    if n <= 0:
        return np.zeros(0)
    if kind == "constant":
        gaps = np.full(n, 1.0 / rate)
    else:
        shape = 1.0 if kind == "poisson" else burstiness
        gaps = rng.gamma(shape=shape, scale=1.0 / (rate * shape), size=n)
    offsets = np.cumsum(gaps)
    return offsets * ((n / rate) / offsets[-1])  # vLLM: the last send lands at n / rate


async def run_open_loop(client: StreamingClient, schedule: Sequence[tuple[float, RequestSpec]],
                        max_inflight: int = 0,
                        on_done: Callable[[RequestRecord], None] | None = None) -> PhaseResult:
    """Send each spec at phase start + its offset; at most `max_inflight` in flight (0: no
    cap). Sends never wait for replies except on the cap."""
    probe = client.health_probe()
    slots = asyncio.Semaphore(max_inflight) if max_inflight > 0 else None
    probe.start()
    t0 = time.perf_counter()
    start_wall = time.time()

    async def one(at: float, spec: RequestSpec) -> RequestRecord:
        due = t0 + at
        if slots is not None:
            await slots.acquire()
        free = time.perf_counter()
        try:
            rec = await client.send(spec)
        finally:
            if slots is not None:
                slots.release()
        ready = max(due, free) if slots is not None else due
        rec.tags["scheduled_s"] = at
        rec.tags["send_lag_s"] = rec.issue_ts - ready
        rec.tags["cap_wait_s"] = max(0.0, free - due) if slots is not None else 0.0
        if on_done is not None:
            on_done(rec)
        return rec

    tasks = []
    with gc_paused():
        for at, spec in schedule:
            # timers round to a millisecond and may wake early: sleep until it is due
            while (delay := t0 + at - time.perf_counter()) > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(at, spec)))
        records = list(await asyncio.gather(*tasks))
        end = time.perf_counter()
        health = await probe.stop()
    sends = [r.send_ts for r in records if not math.isnan(r.send_ts)]
    ends = [r.end_ts for r in records if not math.isnan(r.end_ts)]
    return PhaseResult(records, min(sends, default=t0), max(ends, default=end), start_wall,
                       health)


def lag_figures(records: Sequence[RequestRecord]) -> dict[str, float | None]:
    """send_lag_p99_ms / send_lag_max_ms (and cap_wait_p99_ms) over records that carry them."""
    lags = np.asarray([r.tags["send_lag_s"] for r in records if "send_lag_s" in r.tags])
    waits = np.asarray([r.tags.get("cap_wait_s", 0.0) for r in records
                        if "send_lag_s" in r.tags])
    if not lags.size:
        return {"send_lag_p99_ms": None, "send_lag_max_ms": None, "cap_wait_p99_ms": None}
    return {"send_lag_p99_ms": float(np.percentile(lags, 99) * 1e3),
            "send_lag_max_ms": float(lags.max() * 1e3),
            "cap_wait_p99_ms": float(np.percentile(waits, 99) * 1e3)}
