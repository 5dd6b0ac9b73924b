"""Figures summarised from the time series sampled through a point (harness/sweep/series.py,
docs/series.md), over the measured window: issue 9."""

from __future__ import annotations

from harness.record.catalogue.base import NEUTRAL, Metric
from harness.record.catalogue.base import m as _m

_G = "series"
METRICS: list[Metric] = [
    _m("series_running_mean", "Server running requests (mean of samples)", "requests",
       NEUTRAL, "mean over the 1 s /metrics samples of the engine's running requests", _G),
    _m("series_waiting_max", "Server waiting requests (max)", "requests", NEUTRAL,
       "largest queue the engine reported in a 1 s /metrics sample", _G),
    _m("series_kv_usage_max", "KV-cache usage (max of samples)", "ratio", NEUTRAL,
       "largest KV-cache usage fraction in a /metrics sample (max over ranks)", _G),
    _m("series_gpu_util_mean", "GPU utilisation (mean of samples)", "%", NEUTRAL,
       "mean of the telemetry's utilisation readings over devices and samples", _G),
    _m("series_gpu_mem_max_mib", "GPU memory used (max)", "MiB", NEUTRAL,
       "largest memory-used reading of any device", _G),
]
