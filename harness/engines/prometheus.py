"""Prometheus text from a server's /metrics: parse it, and take counter deltas over a point."""

from __future__ import annotations

import math

Sample = dict[str, float]  # "name{labels}" -> value


def parse(text: str) -> Sample:
    out: Sample = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        # name{labels} value [timestamp]; label values may contain spaces, so split at '}'.
        if "}" in line:
            head, _, rest = line.rpartition("}")
            key, fields = head + "}", rest.split()
        else:
            parts = line.split()
            key, fields = parts[0], parts[1:]
        if not fields:
            continue
        try:
            out[key] = float(fields[0])
        except ValueError:
            continue
    return out


def delta(before: Sample, after: Sample) -> Sample:
    """after - before for every series present in both (counters and gauges alike)."""
    return {k: after[k] - before[k] for k in after if k in before}


def total(sample: Sample, name: str) -> float:
    """Sum of a metric over all its label sets (e.g. one series per model name)."""
    vals = [v for k, v in sample.items() if k == name or k.startswith(name + "{")]
    return float(sum(vals)) if vals else math.nan
