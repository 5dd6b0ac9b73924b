"""Accelerator telemetry sampled through a point: NVML, `nvidia-smi` or `amd-smi` behind one
interface (harness.telemetry.base), chosen by what the host has (docs/energy.md).

`telemetry.source`: auto (NVML, then nvidia-smi, then amd-smi, else none), one of those by
name (refused before the engine starts when the host lacks it), or none. InferenceX samples
nvidia-smi every second; `auto` is our default because it is what that does where it can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.telemetry import amd_smi, nvidia_smi, nvml
from harness.telemetry.base import GpuReading, TelemetrySampler

__all__ = ["NOT_SET", "SOURCES", "Choice", "GpuReading", "TelemetrySampler", "choose"]

_MAKERS: dict[str, tuple[Callable[[], str], Callable[[float], TelemetrySampler]]] = {
    nvml.SOURCE: (nvml.available, nvml.NvmlSampler),
    nvidia_smi.TOOL: (nvidia_smi.available, nvidia_smi.NvidiaSmiSampler),
    amd_smi.TOOL: (amd_smi.available, amd_smi.AmdSmiSampler),
}
SOURCES = ("auto", *_MAKERS, "none")


@dataclass(frozen=True, slots=True)
class Choice:
    """The telemetry a run uses: `source` ('none' when nothing is sampled) and why."""

    source: str
    reason: str = ""

    def sampler(self, period_s: float) -> TelemetrySampler | None:
        if self.source not in _MAKERS:
            return None
        return _MAKERS[self.source][1](period_s)


NOT_SET = Choice("none", "telemetry not set up for this job")


def choose(setting: str) -> Choice:
    """The telemetry `setting` resolves to on this host. ValueError for a named source the
    host lacks or an unknown name (the caller turns it into a ConfigError)."""
    if setting not in SOURCES:
        raise ValueError(f"unknown telemetry source {setting!r}; "
                         f"choose one of {', '.join(SOURCES)}")
    if setting == "none":
        return Choice("none", "telemetry.source=none")
    if setting != "auto":
        why = _MAKERS[setting][0]()
        if why:
            raise ValueError(f"telemetry.source={setting} but {why}")
        return Choice(setting)
    reasons = []
    for source, (available, _) in _MAKERS.items():
        why = available()
        if not why:
            return Choice(source)
        reasons.append(why)
    return Choice("none", "no accelerator telemetry on this host: " + "; ".join(reasons))
