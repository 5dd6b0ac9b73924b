"""Trace loaders (one module per format) behind one function."""

from __future__ import annotations

from pathlib import Path

from harness.workloads.traces import azure, mooncake, weka
from harness.workloads.traces.model import SubAgent, Trace, TraceError, TraceRequest

FORMATS = {"weka": weka.load, "mooncake": mooncake.load, "azure": azure.load}

__all__ = ["FORMATS", "SubAgent", "Trace", "TraceError", "TraceRequest", "detect_format",
           "load_traces"]


def detect_format(path: Path) -> str:
    if path.suffix == ".csv":
        return "azure"
    with path.open("rb") as f:  # bytes: a non-UTF-8 file is reported by its loader
        head = f.read(4096)
    if b'"input_length"' in head and b'"hash_ids"' in head:
        return "mooncake"
    return "weka"


def load_traces(path: str | Path, fmt: str | None = None) -> list[Trace]:
    p = Path(path)
    if not p.is_file():
        raise TraceError(str(p), "whole file", "(path)", "no such file",
                         "check scenario.traces (paths are relative to the repository)")
    fmt = fmt or detect_format(p)
    if fmt not in FORMATS:
        raise TraceError(str(p), "whole file", "(format)", f"unknown format {fmt!r}",
                         f"use one of {sorted(FORMATS)}")
    return FORMATS[fmt](p)
