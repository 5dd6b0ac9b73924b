"""Trace loaders (one module per format) behind one function, and a scenario's traces: its
trace files, or a corpus by dataset id or local copy (harness.workloads.traces.corpus)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.workloads.traces import azure, mooncake, weka
from harness.workloads.traces.model import SubAgent, Trace, TraceError, TraceRequest

if TYPE_CHECKING:
    from harness.config.schema import ScenarioConfig

FORMATS = {"weka": weka.load, "mooncake": mooncake.load, "azure": azure.load}

__all__ = ["FORMATS", "SubAgent", "Trace", "TraceError", "TraceRequest", "detect_format",
           "load_traces", "scenario_traces"]


def detect_format(path: Path) -> str:
    if path.suffix == ".csv":
        return "azure"
    with path.open("rb") as f:  # bytes: a non-UTF-8 file is reported by its loader
        head = f.read(4096)
    if b'"input_length"' in head and b'"hash_ids"' in head:
        return "mooncake"
    return "weka"


def load_traces(path: str | Path, fmt: str | None = None, root: Path | None = None) -> list[Trace]:
    """A trace file's traces. A relative path is the user's own file in the current directory
    when it is there, else the one shipped under `root` (harness/config/locations.py)."""
    from harness.config.locations import data_path, looked_in

    p = data_path(path, root)
    if not p.is_file():
        raise TraceError(str(path), "whole file", "(path)",
                         f"no such file: looked for {looked_in(path, root)}",
                         "give a trace file's path (absolute, or relative to the current "
                         "directory or the shipped scenarios/traces/)")
    fmt = fmt or detect_format(p)
    if fmt not in FORMATS:
        raise TraceError(str(p), "whole file", "(format)", f"unknown format {fmt!r}",
                         f"use one of {sorted(FORMATS)}")
    return FORMATS[fmt](p)


def scenario_traces(scen: ScenarioConfig, root: Path, where: str) -> list[Trace]:
    """The scenario's traces, before any fit: `trace_files`, or `dataset` (never both)."""
    from harness.config.errors import ConfigError

    corpus = scen.dataset.id or scen.dataset.local_dir
    if corpus and scen.trace_files:
        raise ConfigError(where, "scenario.dataset",
                          "both scenario.trace_files and scenario.dataset name traces",
                          "keep one: trace_files=[] for the dataset, or dataset.id=null "
                          "dataset.local_dir=null for the files")
    if corpus:
        if scen.trace_format not in (None, "weka"):
            raise ConfigError(where, "scenario.trace_format",
                              f"a dataset corpus holds Weka traces, not {scen.trace_format}",
                              "set trace_format: weka (or leave it out)")
        from harness.workloads.traces.corpus import load_corpus

        return load_corpus(scen.dataset, root, where)
    if not scen.trace_files:
        raise ConfigError(where, "scenario.trace_files", "the scenario names no traces",
                          "list trace files (relative to the current directory or the shipped "
                          "scenarios/traces/) in trace_files, or "
                          "name a corpus in scenario.dataset (id or local_dir)")
    traces: list[Trace] = []
    for f in scen.trace_files:
        traces.extend(load_traces(f, scen.trace_format, root))
    return traces
