"""What every accelerator-telemetry sampler gives: readings stamped on the client's clock
(`time.perf_counter`, the records' clock), gathered on a thread of its own while a point runs.
A failing tool is a gap in the readings and a count in `errors`, never a failed point."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType


@dataclass(frozen=True, slots=True)
class GpuReading:
    t: float  # perf_counter seconds
    device: str  # the tool's own index ("0", "1", ...)
    power_w: float | None
    util_pct: float | None = None
    mem_used_mib: float | None = None
    sm_clock_mhz: float | None = None
    # NVML's clocks event (throttle) reasons bitmask; None where the tool gives none
    clock_reasons: int | None = None


def wall_to_perf() -> float:
    """Offset that turns a time.time() stamp into a perf_counter one (added to it)."""
    return time.perf_counter() - time.time()


class TelemetrySampler(ABC):
    """`with sampler: ...`; then `sampler.readings`. Subclasses implement `_run` (their loop
    until `self._stop` is set)."""

    source: str = ""

    def __init__(self, period_s: float = 1.0) -> None:
        self.period_s = period_s
        self.readings: list[GpuReading] = []
        self.errors = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, name=f"telemetry-{self.source}",
                                        daemon=True)

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as e:  # the sampler's death is a gap from here on, never the point's
            self.note_error(f"{type(e).__name__}: {e}")

    def note_error(self, text: str) -> None:
        self.errors += 1
        self.last_error = text[:300]

    @abstractmethod
    def _run(self) -> None: ...

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait for the first reading, so that the window to come starts after one (the
        integral needs a reading on each side of it); False after `timeout_s` without."""
        deadline = time.perf_counter() + timeout_s
        while not self.readings and time.perf_counter() < deadline and self._thread.is_alive():
            time.sleep(min(0.05, self.period_s / 4))
        return bool(self.readings)

    def wait_past(self, t: float, timeout_s: float) -> bool:
        """Keep sampling until every device seen has a reading at or after `t` (the end of
        the measured window), at most `timeout_s`; False when one never did (at once when
        the tool has given nothing at all)."""
        deadline = time.perf_counter() + timeout_s
        while self.readings and time.perf_counter() < deadline and self._thread.is_alive():
            latest: dict[str, float] = {}
            for r in list(self.readings):
                latest[r.device] = max(latest.get(r.device, r.t), r.t)
            if latest and min(latest.values()) >= t:
                return True
            time.sleep(min(0.05, self.period_s / 4))
        return False

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def __enter__(self) -> TelemetrySampler:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class PolledSampler(TelemetrySampler):
    """A sampler that asks once a period (`read`), stamping readings itself."""

    @abstractmethod
    def read(self) -> list[GpuReading]: ...

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            try:
                self.readings.extend(self.read())
            except Exception as e:  # one failed read is one gap
                self.note_error(f"{type(e).__name__}: {e}")
            self._stop.wait(max(0.0, self.period_s - (time.perf_counter() - t)))
