"""A fake `nvidia-smi` that answers any --query-gpu field list the harness asks for, the clock
fields included, from harness.testing.telemetry_emulator's power trace plus clock facts, so
the clock and throttle reading can be checked end to end (tests/telemetry/test_gpu_clocks.py).

    install(bin_dir, trace) -> PATH value with an executable named nvidia-smi

Trace keys beyond telemetry_emulator's: "sm_mhz" (the SM clock), "reasons": [[from_s, to_s,
mask], ...] (seconds after the loop starts; the mask printed as nvidia-smi prints it, hex),
"unknown_fields": [...] (fields this driver rejects as nvidia-smi does: exit 2, one line on
stdout, e.g. clocks_event_reasons.active on a driver older than R535).
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

from harness.testing.telemetry_emulator import TRACE_ENV, power, visible


def install(bin_dir: Path, trace: dict[str, Any]) -> str:
    bin_dir.mkdir(parents=True, exist_ok=True)
    trace_path = bin_dir / "trace.json"
    trace_path.write_text(json.dumps(trace))
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\n{TRACE_ENV}={trace_path} exec {sys.executable} -m "
                   f"harness.testing.gpu_clocks_emulator \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def cell(trace: dict[str, Any], field: str, device: str, wall: float, since: float) -> str:
    if field == "index":
        return device
    if field == "timestamp":
        return datetime.fromtimestamp(wall).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    if field == "power.draw":
        return f"{power(trace, device, wall):.2f}"
    if field == "utilization.gpu":
        return "50"
    if field == "memory.used":
        return "1024"
    if field in ("clocks.sm", "clocks.current.sm"):
        return str(trace.get("sm_mhz", 1980))
    if field in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
        mask = next((int(m) for lo, hi, m in trace.get("reasons", []) if lo <= since < hi), 0)
        return f"0x{mask:016x}"
    raise KeyError(field)


def main(args: list[str]) -> int:
    trace = json.loads(Path(os.environ[TRACE_ENV]).read_text())
    query = next(a.split("=", 1)[1] for a in args if a.startswith("--query-gpu="))
    fields = query.split(",")
    for f in fields:
        if f in trace.get("unknown_fields", []):
            print(f'Field "{f}" is not a valid field to query.', flush=True)
            return 2
    period_ms = next((int(args[i + 1]) for i, a in enumerate(args) if a == "-lms"), None)
    started = time.time()
    while True:
        wall = time.time()
        rows = [", ".join(cell(trace, f, d, wall, wall - started) for f in fields)
                for d in trace["devices"] if visible(trace, d, wall, started)]
        print("\n".join(rows), flush=True)
        if period_ms is None:
            return 0
        time.sleep(max(0.0, period_ms / 1000 - (time.time() - wall)))


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
