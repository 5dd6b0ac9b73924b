"""The server's metrics sampled through a point: one scrape a second on a thread of its own,
stamped on the client's clock (`time.perf_counter`, the records' clock).

Gauges that cover only the last logging interval (SGLang's accept length) can only be read
this way: a scrape before and after the point sees one interval, not the window. The samples
are also the point's server time series (kept in `server_metrics/<point_id>.json`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from harness.engines import prometheus

Sampled = list[tuple[float, prometheus.Sample]]


class MetricsSampler:
    """`with MetricsSampler(scrape) as s: ...`; then `s.samples` holds (t, sample) pairs."""

    def __init__(self, scrape: Callable[[], prometheus.Sample], period_s: float = 1.0) -> None:
        self.scrape, self.period_s = scrape, period_s
        self.samples: Sampled = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="metrics-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            try:
                sample = self.scrape()
            except Exception:  # a failed scrape is a gap in the series, never a failed point
                self.errors += 1
            else:
                if sample:
                    self.samples.append((t, sample))
            self._stop.wait(max(0.0, self.period_s - (time.perf_counter() - t)))

    def __enter__(self) -> MetricsSampler:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def within(self, start: float, end: float) -> Sampled:
        """The samples taken inside [start, end] (the measured window)."""
        return [(t, s) for t, s in self.samples if start <= t <= end]
