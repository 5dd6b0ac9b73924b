"""NVIDIA telemetry through NVML (`pynvml`, from the nvidia-ml-py package), where it imports:
no subprocess, readings stamped as they are taken. Board power is nvmlDeviceGetPowerUsage
(milliwatts), as nvidia-smi's power.draw."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from harness.telemetry.base import GpuReading, PolledSampler

SOURCE = "nvml"


def _nvml() -> Any:
    import pynvml  # optional: only hosts with NVIDIA drivers have a use for it

    pynvml.nvmlInit()
    return pynvml


def _clocks(lib: Any, handle: Any) -> tuple[float | None, int | None]:
    """The SM clock (MHz) and the clocks event reasons mask, each None where this driver or
    pynvml lacks it (nvmlDeviceGetCurrentClocksEventReasons from R535, the Throttle name
    before)."""
    sm = reasons = None
    with contextlib.suppress(Exception):
        sm = float(lib.nvmlDeviceGetClockInfo(handle, lib.NVML_CLOCK_SM))
    get = (getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
           or getattr(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
    if get is not None:
        with contextlib.suppress(Exception):
            reasons = int(get(handle))
    return sm, reasons


class NvmlSampler(PolledSampler):
    source = SOURCE

    def __init__(self, period_s: float = 1.0) -> None:
        super().__init__(period_s)
        self._lib: Any = None
        self._handles: list[Any] = []

    def read(self) -> list[GpuReading]:
        if self._lib is None:
            self._lib = _nvml()
            n = self._lib.nvmlDeviceGetCount()
            self._handles = [self._lib.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        lib, out = self._lib, []
        for i, h in enumerate(self._handles):
            t = time.perf_counter()
            power = lib.nvmlDeviceGetPowerUsage(h) / 1000.0
            util = float(lib.nvmlDeviceGetUtilizationRates(h).gpu)
            mem = lib.nvmlDeviceGetMemoryInfo(h).used / (1 << 20)
            out.append(GpuReading(t, str(i), power, util, mem, *_clocks(lib, h)))
        return out

    def stop(self) -> None:
        super().stop()
        if self._lib is not None:
            # shutting down a library that failed is no measurement's concern
            with contextlib.suppress(Exception):
                self._lib.nvmlShutdown()


def available() -> str:
    """Why NVML cannot be used here, or '' when it sees at least one GPU."""
    try:
        lib = _nvml()
    except ImportError:
        return "pynvml is not installed"
    except Exception as e:
        return f"NVML did not initialise ({e})"
    try:
        n = int(lib.nvmlDeviceGetCount())
    finally:
        lib.nvmlShutdown()
    return "" if n > 0 else "NVML sees no GPU"
