"""What the GPU's clocks did in a point's window: the SM clock and why it was held down, from
the readings' clock-reasons bitmask (NVML's nvmlClocksEventReasons, the same bits nvidia-smi
prints as clocks_event_reasons.active; nvml.h, NVIDIA NVML API reference, "ClocksEventReasons").
Judged by harness.record.validity.gpu_clock_rules.

Which bits disturb a measurement: heat and the board's protections (software and hardware
thermal slowdown, hardware slowdown, the power brake) are the host misbehaving, and a point
measured under them is not the chip's figure. The software power cap is the chip working at
its power limit, normal under load on current parts, so it is recorded (`gpu_power_capped_share`)
and never judged. Idle, application-clock, sync-boost and display bits say nothing about speed
under load.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from harness.telemetry.base import GpuReading

REASON_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
DISTURBING = 0x8 | 0x20 | 0x40 | 0x80
POWER_CAP = 0x4


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASON_BITS.items() if mask & bit]


def clock_figures(readings: Iterable[GpuReading], start: float, end: float,
                  devices: Sequence[str] = ()) -> dict[str, object]:
    """`gpu_*` clock figures over readings inside [start, end] (of `devices`, or all); empty
    when no reading there carries a reasons mask (the tool gives none)."""
    inside = [r for r in readings if start <= r.t <= end and (not devices or r.device in devices)]
    masked = [r for r in inside if r.clock_reasons is not None]
    if not masked:
        return {}
    disturbed = [r for r in masked if r.clock_reasons & DISTURBING]
    seen = 0
    for r in disturbed:
        seen |= r.clock_reasons & DISTURBING
    clocks = [r.sm_clock_mhz for r in inside
              if r.sm_clock_mhz is not None and math.isfinite(r.sm_clock_mhz)]
    return {
        "gpu_clock_readings": len(masked),
        "gpu_throttled_share": len(disturbed) / len(masked),
        "gpu_throttle_reasons": reason_names(seen) or None,
        "gpu_throttled_devices": sorted({r.device for r in disturbed}) or None,
        "gpu_power_capped_share": sum(1 for r in masked if r.clock_reasons & POWER_CAP)
        / len(masked),
        "gpu_sm_clock_min_mhz": min(clocks) if clocks else None,
        "gpu_sm_clock_mean_mhz": sum(clocks) / len(clocks) if clocks else None,
    }
