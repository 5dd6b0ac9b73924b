"""AMD telemetry from `amd-smi metric --power --usage --mem-usage --json`, asked once a period.

amd-smi's JSON has no timestamp, so a reading is stamped at the middle of the call (one call
takes a few hundred ms). Two documented shapes are read: a list of per-GPU objects (ROCm 6.0
to 6.3) and `{"gpu_data": [...]}` (6.4 on); a value is `{"value": v, "unit": u}` or a bare
number, "N/A" where unsupported. Power is `power.socket_power` (MI300 on: current socket power;
`amdsmi_power_info_t` in amdsmi.h), utilisation `usage.gfx_activity`, memory
`mem_usage.used_vram`."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

from harness.telemetry.base import GpuReading, PolledSampler

TOOL = "amd-smi"
ARGS = ("metric", "--power", "--usage", "--mem-usage", "--json")
_TO_MIB = {"mb": 1.0, "mib": 1.0, "gb": 1024.0, "gib": 1024.0, "b": 1.0 / (1 << 20)}


def _value(node: Any) -> tuple[float | None, str]:
    """(number, unit) of one amd-smi value; None where it says N/A."""
    unit = ""
    if isinstance(node, dict):
        unit = str(node.get("unit", ""))
        node = node.get("value")
    if isinstance(node, bool):
        return None, unit
    if isinstance(node, int | float):
        return float(node), unit
    try:
        return float(str(node).split()[0]), unit
    except (ValueError, IndexError):
        return None, unit


def _gpus(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, dict):
        doc = doc.get("gpu_data", [doc])
    return [g for g in doc if isinstance(g, dict)] if isinstance(doc, list) else []


def parse(text: str, t: float) -> list[GpuReading]:
    """Every GPU of one `amd-smi metric --json` answer, stamped `t`."""
    out = []
    for g in _gpus(json.loads(text)):
        if "gpu" not in g:
            continue
        power, _ = _value((g.get("power") or {}).get("socket_power"))
        util, _ = _value((g.get("usage") or {}).get("gfx_activity"))
        mem, unit = _value((g.get("mem_usage") or {}).get("used_vram"))
        if mem is not None:
            mem *= _TO_MIB.get(unit.lower(), 1.0)
        out.append(GpuReading(t, str(g["gpu"]), power, util, mem))
    return out


class AmdSmiSampler(PolledSampler):
    source = TOOL

    def __init__(self, period_s: float = 1.0, tool: str = TOOL) -> None:
        super().__init__(period_s)
        self.tool = tool

    def read(self) -> list[GpuReading]:
        t0 = time.perf_counter()
        out = subprocess.run([self.tool, *ARGS], capture_output=True, text=True,
                             timeout=max(10.0, 5 * self.period_s))
        t1 = time.perf_counter()
        if out.returncode != 0:
            raise RuntimeError(f"{self.tool} exited with {out.returncode}: "
                               f"{out.stderr.strip()[-200:]}")
        return parse(out.stdout, (t0 + t1) / 2)


def available(tool: str = TOOL) -> str:
    """Why amd-smi cannot be used here, or '' when it reports at least one GPU."""
    path = shutil.which(tool)
    if path is None:
        return f"{tool} is not on PATH"
    try:
        out = subprocess.run([path, *ARGS], capture_output=True, text=True, timeout=30)
        found = out.returncode == 0 and parse(out.stdout, 0.0)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        return f"{tool} did not answer ({e})"
    return "" if found else f"{tool} reports no GPU (exit {out.returncode})"
