"""The client's self-check: its raw lag samples, and stamp-error figures that bound the truth."""

from __future__ import annotations

import asyncio
import time

from harness.client_health import ClientHealth, HealthProbe


class _Meter:
    def reset_inflight_area(self) -> None:
        pass

    def inflight_area(self) -> float:
        return 0.0


def test_lag_samples_are_wakeups_on_the_perf_counter_clock() -> None:
    """Each sample is (perf_counter at the wake-up, lateness in ms), in order, inside the
    probe's window; a 30 ms blocking stall shows as one sample about 25 ms late. The samples
    are raw data for time series, not a point field."""
    async def main() -> tuple[float, float, ClientHealth]:
        probe = HealthProbe(_Meter())
        t0 = time.perf_counter()
        probe.start()
        await asyncio.sleep(0.03)
        time.sleep(0.03)  # the loop cannot run: the next wake-up is ~25 ms late
        await asyncio.sleep(0.03)
        h = await probe.stop()
        return t0, time.perf_counter(), h

    t0, t1, h = asyncio.run(main())
    times = [t for t, _ in h.lag_samples]
    lags = [lag for _, lag in h.lag_samples]
    assert len(h.lag_samples) >= 3 and times == sorted(times)
    assert t0 < times[0] and times[-1] < t1
    assert max(lags) >= 20.0 and max(lags) == h.lag_max_ms
    assert "lag_samples" not in ClientHealth().fields()
