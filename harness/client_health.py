"""The client watching itself: event-loop lag, CPU share, requests in flight, and from them an
estimate of its own timestamp error. A point whose client was the bottleneck is flagged."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

# The probe only sees stalls that cover one of its wake-ups, so a stall shorter than this can
# go unseen (tests/test_client_accuracy.py measures the real per-chunk error instead). A 1 ms
# probe would see more but costs CPU the 750k chunks/s target does not have.
_LAG_PROBE_S = 0.005


@dataclass(slots=True)
class ClientHealth:
    """How the client itself behaved during a phase."""

    lag_p50_ms: float = math.nan  # how late a 5 ms timer fired
    lag_p99_ms: float = math.nan
    lag_max_ms: float = math.nan
    # Estimated timestamp error of a chunk arriving at a random instant (see stamp_error_quantile)
    stamp_err_p99_ms: float = math.nan
    stamp_err_p999_ms: float = math.nan
    cpu_share: float = math.nan  # process CPU seconds / wall seconds
    inflight_mean: float = math.nan  # time-weighted mean of requests in flight
    bottleneck: bool = False
    reasons: list[str] = field(default_factory=list)
    # Every probe wake-up as (perf_counter when it woke, how late in ms): for time series of
    # the client's own lag. Not in fields(): a point records summaries, not samples.
    lag_samples: list[tuple[float, float]] = field(default_factory=list)

    def fields(self) -> dict[str, object]:
        """What the point records of the client's health (keys in harness/catalogue)."""
        return {
            "client_bottleneck": self.bottleneck,
            "client_lag_p99_ms": self.lag_p99_ms,
            "client_lag_max_ms": self.lag_max_ms,
            "client_stamp_err_p99_ms": self.stamp_err_p99_ms,
            "client_cpu_share": self.cpu_share,
            "client_inflight_mean": self.inflight_mean,
        }


class InflightMeter(Protocol):
    """What the probe reads of the client: its time-weighted requests in flight."""

    def reset_inflight_area(self) -> None: ...

    def inflight_area(self) -> float: ...


class HealthProbe:
    """Samples event-loop lag and CPU share while a phase runs.

    Given the in-flight accounting and the thresholds explicitly (`StreamingClient.health_probe()`
    builds one), so that this module needs nothing from the client's.
    """

    def __init__(self, meter: InflightMeter, max_stamp_err_ms: float = 1.0,
                 max_cpu_share: float = 0.95) -> None:
        self.meter = meter
        self.max_stamp_err_ms, self.max_cpu_share = max_stamp_err_ms, max_cpu_share
        self._lags: list[float] = []
        self._woke: list[float] = []  # perf_counter of each wake-up, beside its lag
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = 0.0
        self._wall0 = 0.0

    async def _probe(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(_LAG_PROBE_S)
            now = time.perf_counter()
            self._woke.append(now)
            self._lags.append(now - t - _LAG_PROBE_S)

    def start(self) -> None:
        self._cpu0 = time.process_time()
        self._wall0 = time.perf_counter()
        self.meter.reset_inflight_area()
        self._task = asyncio.create_task(self._probe())

    async def stop(self) -> ClientHealth:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                # The probe's own cancellation ends here; one aimed at the task awaiting us
                # (Ctrl-C, a deadline) arrives as the same exception and must go on.
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
        wall = max(time.perf_counter() - self._wall0, 1e-9)
        h = ClientHealth()
        h.cpu_share = (time.process_time() - self._cpu0) / wall
        h.inflight_mean = self.meter.inflight_area() / wall
        if self._lags:
            lags_ms = np.asarray(self._lags) * 1000.0
            h.lag_samples = list(zip(self._woke, lags_ms.tolist(), strict=True))
            h.lag_p50_ms = float(np.percentile(lags_ms, 50))
            h.lag_p99_ms = float(np.percentile(lags_ms, 99))
            h.lag_max_ms = float(lags_ms.max())
            h.stamp_err_p99_ms = stamp_error_quantile(lags_ms, wall * 1000.0, 0.99)
            h.stamp_err_p999_ms = stamp_error_quantile(lags_ms, wall * 1000.0, 0.999)
        if h.stamp_err_p99_ms > self.max_stamp_err_ms:
            h.reasons.append(
                f"client timestamp error p99 ~{h.stamp_err_p99_ms:.1f} ms "
                f"> {self.max_stamp_err_ms:g} ms (event loop busy or descheduled)"
            )
        if h.cpu_share > self.max_cpu_share:
            h.reasons.append(f"client CPU share {h.cpu_share:.2f} > {self.max_cpu_share:g}")
        h.bottleneck = bool(h.reasons)
        return h


def stamp_error_quantile(lags_ms: np.ndarray, wall_ms: float, q: float) -> float:
    """Estimated q-quantile of the delay between a chunk's arrival and its timestamp.

    A timer that fires L ms late reveals a span of about L ms in which the loop could not run;
    a chunk arriving inside that span waits between 0 and L ms. With chunks arriving at random
    instants, P(delay > x) = sum(max(0, L_i - x)) / wall. Timer granularity makes every timer a
    little late, so the median lateness is taken as the baseline and only the excess counts.
    """
    if lags_ms.size == 0 or wall_ms <= 0:
        return math.nan
    excess = np.clip(lags_ms - np.median(lags_ms), 0.0, None)
    target = (1.0 - q) * wall_ms

    def time_above(x: float) -> float:
        return float(np.clip(excess - x, 0.0, None).sum())

    if time_above(0.0) <= target:
        return 0.0
    lo, hi = 0.0, float(excess.max())
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if time_above(mid) > target else (lo, mid)
    return hi
