"""What a client's health probe reads of it: requests in flight over time, and the requests
finished since the last reset (harness.client.health.InflightMeter). One implementation for
harness.client.streaming.StreamingClient and harness.client.pool.ClientPool."""

from __future__ import annotations

import time


class InflightAccount:
    """Requests in flight over time (time-weighted) and those finished since the last reset."""

    def __init__(self) -> None:
        self.inflight = 0
        self._inflight_area = 0.0
        self._inflight_t = time.perf_counter()
        # Per finished request since the last reset: (queue delay, send, first token, last
        # token) on perf_counter, the token stamps NaN if it failed. The health probe turns
        # them into the point's queue-delay figures and the stall bound.
        self._finished: list[tuple[float, float, float, float]] = []

    def _track(self, delta: int) -> None:
        now = time.perf_counter()
        self._inflight_area += self.inflight * (now - self._inflight_t)
        self._inflight_t = now
        self.inflight += delta

    def reset_inflight_area(self) -> None:
        self._track(0)
        self._inflight_area = 0.0
        self._finished = []

    def finished_requests(self) -> list[tuple[float, float, float, float]]:
        """(queue delay, send, first token, last token) in seconds of each request finished
        since the last reset_inflight_area(); token stamps NaN for failed requests."""
        return self._finished

    def inflight_area(self) -> float:
        self._track(0)
        return self._inflight_area
