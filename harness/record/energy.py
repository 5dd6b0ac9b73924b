"""Measured energy of a point: board power integrated per device over the measured window, with
InferenceX's validity rules, and the figures derived from it (docs/energy.md). Pure.

The method and the reason codes are InferenceX's
(SemiAnalysisAI/InferenceX:utils/aggregate_power.py@02fff9ee486ed6f27a3fc2d5d9ed0fdfe8892284,
`integrate_power`): per-device trapezoidal integration with linear interpolation at the window
boundaries; a device's samples must bracket both ends of the window; no in-window gap between
consecutive samples may exceed `max_gap_s` (3 s there); the devices seen must be the GPUs the
point occupies. Any reason makes `power_valid` false and the energy figures absent (never a
guess), and an invalid power measurement never fails the point: upstream is best-effort too.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_GAP_S = 3.0  # upstream's _DEFAULT_MAX_SAMPLE_GAP_S
METHOD = "per_device_trapezoidal_with_linear_boundary_interpolation"

Trace = Sequence[tuple[float, float]]  # (t seconds, watts), one device


@dataclass(frozen=True, slots=True)
class PowerIntegration:
    """The audit of one point's power: valid or why not, and per-device energy."""

    power_valid: bool
    reasons: tuple[str, ...]
    expected_devices: int | None
    devices: tuple[str, ...]
    sample_counts: dict[str, int] = field(default_factory=dict)
    max_gap_s: dict[str, float] = field(default_factory=dict)
    energy_j: dict[str, float] = field(default_factory=dict)
    device_issues: dict[str, list[str]] = field(default_factory=dict)
    window_s: float = math.nan

    @property
    def total_energy_j(self) -> float | None:
        """Whole-deployment energy; None unless every device seen was integrated."""
        if not self.devices or len(self.energy_j) != len(self.devices):
            return None
        return sum(self.energy_j.values())


def _interpolate(trace: Trace, t: float) -> float:
    """Power at `t`, linear between the samples that bracket it (exact on a sample)."""
    times = [s for s, _ in trace]
    i = bisect.bisect_left(times, t)
    if i < len(trace) and math.isclose(trace[i][0], t, rel_tol=0.0, abs_tol=1e-9):
        return trace[i][1]
    (t0, p0), (t1, p1) = trace[i - 1], trace[i]
    return p0 + (t - t0) / (t1 - t0) * (p1 - p0)


def integrate_device(trace: Trace, start: float, end: float) -> float:
    """Joules of one device over [start, end]; `trace` sorted and bracketing the window."""
    pts = [(start, _interpolate(trace, start)),
           *((t, p) for t, p in trace if start < t < end),
           (end, _interpolate(trace, end))]
    return sum((t1 - t0) * (p0 + p1) / 2.0 for (t0, p0), (t1, p1) in itertools.pairwise(pts))


def _clean(readings: Iterable[tuple[str, float, float | None]], start: float, end: float,
           max_gap_s: float, reasons: list[str]) -> dict[str, Trace]:
    """(device, t, watts) readings near the window, per device, sorted; readings at the same
    instant averaged (upstream: some tools stamp coarser than they sample)."""
    raw: dict[str, dict[float, list[float]]] = {}
    for device, t, watts in readings:
        if not math.isfinite(t):
            _add(reasons, "invalid_timestamp_sample")
            continue
        if t < start - max_gap_s or t > end + max_gap_s:
            continue  # warmup and after-window readings cannot affect the integral
        if watts is None or not math.isfinite(watts) or watts < 0:
            _add(reasons, "invalid_power_sample")
            continue
        if not device:
            _add(reasons, "gpu_identity_missing")
            continue
        raw.setdefault(device, {}).setdefault(t, []).append(watts)
    return {d: sorted((t, sum(v) / len(v)) for t, v in by_t.items()) for d, by_t in raw.items()}


def _add(reasons: list[str], reason: str) -> None:
    if reason not in reasons:
        reasons.append(reason)


def _device_order(device: str) -> tuple[int, int | str]:
    return (0, int(device)) if device.isdigit() else (1, device)


def integrate(readings: Iterable[tuple[str, float, float | None]], start: float, end: float,
              expected_devices: int | None = None,
              max_gap_s: float = DEFAULT_MAX_GAP_S) -> PowerIntegration:
    """Validate and integrate (device, t, watts) readings over the window [start, end]."""
    reasons: list[str] = []
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        return PowerIntegration(False, ("invalid_benchmark_window",), expected_devices, ())
    if not math.isfinite(max_gap_s) or max_gap_s <= 0:
        return PowerIntegration(False, ("invalid_max_sample_gap",), expected_devices, ())
    traces = _clean(readings, start, end, max_gap_s, reasons)
    if not traces:
        _add(reasons, "no_usable_power_samples")
        return PowerIntegration(False, tuple(reasons), expected_devices, (), window_s=end - start)
    devices = tuple(sorted(traces, key=_device_order))
    if expected_devices is not None and len(devices) != expected_devices:
        _add(reasons, "expected_gpu_count_mismatch")
    out = PowerIntegration(False, (), expected_devices, devices, window_s=end - start)
    for d in devices:
        _check_device(d, traces[d], start, end, max_gap_s, out, reasons)
    return PowerIntegration(not reasons, tuple(reasons), expected_devices, devices,
                            out.sample_counts, out.max_gap_s, out.energy_j, out.device_issues,
                            end - start)


def _check_device(device: str, trace: Trace, start: float, end: float, max_gap_s: float,
                  out: PowerIntegration, reasons: list[str]) -> None:
    """One device's rules (upstream's order: enough samples, window bracketed, gaps)."""
    out.sample_counts[device] = len(trace)
    issues: list[str] = []
    if len(trace) < 2:
        issues.append("insufficient_power_samples")
    elif trace[0][0] > start or trace[-1][0] < end:
        issues.append("benchmark_window_not_bracketed")
    else:
        times = [t for t, _ in trace]
        lo = bisect.bisect_right(times, start) - 1
        hi = bisect.bisect_left(times, end)
        inside = times[lo:hi + 1]
        gap = max((b - a for a, b in itertools.pairwise(inside)), default=0.0)
        out.max_gap_s[device] = gap
        if gap > max_gap_s:
            issues.append("sampling_gap_exceeded")
        out.energy_j[device] = integrate_device(trace, start, end)
    for issue in issues:
        _add(reasons, issue)
    if issues:
        out.device_issues[device] = issues


def energy_figures(p: PowerIntegration, input_tokens: int, output_tokens: int,
                   completed: int) -> dict[str, float]:
    """The measured figures of a valid integration ({} otherwise: never a partial guess).
    Average power is per device, as upstream's avg_power_w; tokens/s per MW uses the whole
    deployment's measured power."""
    energy = p.total_energy_j
    if not p.power_valid or energy is None or energy <= 0:
        return {}
    total_w = energy / p.window_s
    total_tokens = input_tokens + output_tokens
    out = {"measured_avg_power_w": total_w / len(p.devices),
           "measured_total_power_w": total_w, "measured_energy_j": energy}
    if output_tokens > 0:
        out["measured_j_per_output_tok"] = energy / output_tokens
    if total_tokens > 0:
        out["measured_j_per_tok"] = energy / total_tokens
        out["measured_tok_s_per_mw"] = total_tokens / p.window_s / (total_w / 1e6)
    if completed > 0:
        out["measured_j_per_request"] = energy / completed
    return out


def audit(p: PowerIntegration, source: str, figures: Mapping[str, float],
          max_gap_s: float) -> dict[str, Any]:
    """The point's power sidecar (power/<point_id>.json), as upstream's validation file."""
    return {
        "schema_version": 1, "power_valid": p.power_valid, "reasons": list(p.reasons),
        "telemetry_source": source, "integration_method": METHOD,
        "window_s": p.window_s, "max_sample_gap_s": max_gap_s,
        "expected_gpu_count": p.expected_devices, "observed_gpu_count": len(p.devices),
        "observed_gpu_ids": list(p.devices), "per_gpu_sample_counts": p.sample_counts,
        "per_gpu_max_sample_gap_s": p.max_gap_s, "per_gpu_energy_j": p.energy_j,
        "device_issues": p.device_issues, "metrics": dict(figures),
    }
