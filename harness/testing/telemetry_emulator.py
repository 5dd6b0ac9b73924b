"""Fake `nvidia-smi` and `amd-smi` that print exactly what the real tools print for the
queries the harness makes, from a known power trace, so that energy can be checked against a
hand-integrated value (tests/telemetry/test_telemetry.py).

    install(bin_dir, trace) -> PATH value with executables named nvidia-smi and amd-smi

The trace (JSON, in $HARNESS_TELEMETRY_TRACE) gives each device a linear power law
`watts = a + b * (now - t0)` (trapezoidal integration is exact on it), and faults to make the
validity rules fail:

    {"t0": epoch_s, "devices": {"0": [a, b], ...},
     "gaps": [[from_s, to_s], ...],      # seconds after t0 during which no row is printed
     "device_stops": {"1": after_s},     # a device that disappears after_s after t0
     "exit_after_s": s,                  # the nvidia-smi loop exits (restarted: a gap)
     "power_na": ["1"],                  # devices whose power cell is "[N/A]"
     "amd_shape": "list" | "gpu_data",   # which amd-smi JSON shape (ROCm <= 6.3, >= 6.4)
     "faults_from": "loop"}              # nvidia-smi: gaps and stops count from the loop's
                                         # start, not t0 (a test's set-up time then cannot
                                         # move them out of the measured window)

Stdlib only: this runs as its own process once per sample (amd-smi) or per loop (nvidia-smi).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

TRACE_ENV = "HARNESS_TELEMETRY_TRACE"
TOOLS = ("nvidia-smi", "amd-smi")


def install(bin_dir: Path, trace: dict[str, Any]) -> str:
    """Write the trace and the two fake tools into `bin_dir`; the PATH to run them with."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    trace_path = bin_dir / "trace.json"
    trace_path.write_text(json.dumps(trace))
    for tool in TOOLS:
        exe = bin_dir / tool
        exe.write_text(f"#!/bin/sh\n{TRACE_ENV}={trace_path} exec {sys.executable} -m "
                       f"harness.testing.telemetry_emulator {tool} \"$@\"\n")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def power(trace: dict[str, Any], device: str, wall: float) -> float:
    a, b = trace["devices"][device]
    return float(a) + float(b) * (wall - float(trace["t0"]))


def visible(trace: dict[str, Any], device: str, wall: float, base: float | None = None) -> bool:
    """Whether a row for `device` is printed at `wall` (gaps and stopped devices print none);
    fault times count from `base` (the loop's start) or else from t0."""
    since = wall - (float(trace["t0"]) if base is None else base)
    if any(lo <= since < hi for lo, hi in trace.get("gaps", [])):
        return False
    stop = trace.get("device_stops", {}).get(device)
    return stop is None or since < float(stop)


def _util(device: str) -> int:
    return 50 + int(device) % 50 if device.isdigit() else 50


def nvidia_row(trace: dict[str, Any], device: str, wall: float) -> str:
    """One row of --query-gpu=index,timestamp,power.draw,utilization.gpu,memory.used with
    --format=csv,noheader,nounits (nvidia-smi's timestamp: local time, milliseconds)."""
    stamp = datetime.fromtimestamp(wall).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    watts = ("[N/A]" if device in trace.get("power_na", [])
             else f"{power(trace, device, wall):.2f}")
    return f"{device}, {stamp}, {watts}, {_util(device)}, {1024 + 10 * int(device or 0)}"


def _loop_ms(args: list[str]) -> int | None:
    for i, a in enumerate(args):
        if a.startswith(("-lms=", "--loop-ms=")):
            return int(a.split("=", 1)[1])
        if a in ("-lms", "--loop-ms") and i + 1 < len(args):
            return int(args[i + 1])
    return None


def run_nvidia_smi(trace: dict[str, Any], args: list[str]) -> int:
    devices = list(trace["devices"])
    if "--query-gpu=index" in args:  # the availability check
        print("\n".join(devices), flush=True)
        return 0
    period_ms = _loop_ms(args)
    started = time.time()
    while True:
        wall = time.time()
        exit_after = trace.get("exit_after_s")
        if exit_after is not None and wall - float(trace["t0"]) >= float(exit_after) \
                and started - float(trace["t0"]) < float(exit_after):
            return 0  # the loop ends once; the restarted loop carries on
        base = started if trace.get("faults_from") == "loop" else None
        rows = [nvidia_row(trace, d, wall) for d in devices if visible(trace, d, wall, base)]
        if rows:
            print("\n".join(rows), flush=True)
        if period_ms is None:
            return 0
        time.sleep(max(0.0, period_ms / 1000 - (time.time() - wall)))


def amd_gpu(trace: dict[str, Any], device: str, wall: float) -> dict[str, Any]:
    """One GPU of `amd-smi metric --power --usage --mem-usage --json`."""
    watts: Any = ("N/A" if device in trace.get("power_na", [])
                  else round(power(trace, device, wall), 3))
    return {"gpu": int(device),
            "power": {"socket_power": {"value": watts, "unit": "W"},
                      "gfx_voltage": "N/A", "soc_voltage": "N/A", "mem_voltage": "N/A"},
            "usage": {"gfx_activity": {"value": _util(device), "unit": "%"},
                      "umc_activity": {"value": 0, "unit": "%"}},
            "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"},
                          "used_vram": {"value": 1024 + 10 * int(device), "unit": "MB"},
                          "free_vram": {"value": 195568, "unit": "MB"}}}


def run_amd_smi(trace: dict[str, Any], args: list[str]) -> int:
    if not args or args[0] != "metric" or "--json" not in args:
        print("emulated amd-smi answers `metric ... --json` only", file=sys.stderr)
        return 2
    wall = time.time()
    gpus = [amd_gpu(trace, d, wall) for d in trace["devices"] if visible(trace, d, wall)]
    doc: Any = {"gpu_data": gpus} if trace.get("amd_shape") == "gpu_data" else gpus
    print(json.dumps(doc, indent=4), flush=True)
    return 0


def main(argv: list[str]) -> int:
    tool, args = argv[0], argv[1:]
    trace = json.loads(Path(os.environ[TRACE_ENV]).read_text())
    try:
        return run_nvidia_smi(trace, args) if tool == "nvidia-smi" else run_amd_smi(trace, args)
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
