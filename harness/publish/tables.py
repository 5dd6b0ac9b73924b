"""Throughput per GPU at chosen interactivity targets, read off each series' Pareto frontier
with a monotone spline (never extrapolated), as CSV and Markdown."""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from harness.publish.curves import interpolate_at, pareto_frontier, series_label
from harness.record.metrics import metric
from harness.record.point_record import PointRecord


def scenario_label(p: PointRecord) -> str:
    """The scenario's name, and for fixed-sequence points the shape that was run (a name keeps
    its label when scenario.isl/osl are overridden, the shape does not)."""
    i = p.identity
    if p.traits.fixed_shape:
        return f"{i.scenario} (ISL {i.isl}, OSL {i.osl})"
    return i.scenario


def frontier_table(points: Sequence[PointRecord], targets: Sequence[float],
                   x: str = "median_intvty", y: str = "tput_per_gpu") -> list[dict[str, Any]]:
    """y at each x target along each series' frontier, in the directions the catalogue gives
    (valid points only; series never merge across scenario settings)."""
    mx, my = metric(x), metric(y)
    groups: dict[tuple, list[PointRecord]] = defaultdict(list)
    for p in points:
        if p.valid and p.get(x) is not None and p.get(y) is not None:
            groups[(scenario_label(p), p.identity.scenario_settings, p.series_key())].append(p)
    rows = []
    for (scenario, _, key), pts in sorted(groups.items(), key=lambda kv: str(kv[0])):
        xs, ys = [float(p.get(x)) for p in pts], [float(p.get(y)) for p in pts]
        idx = pareto_frontier(xs, ys, mx.higher_is_better, my.higher_is_better)
        fx, fy = [xs[i] for i in idx], [ys[i] for i in idx]
        row: dict[str, Any] = {"scenario": scenario, "series": series_label(key),
                               "frontier_points": len(idx),
                               f"{x}_range": f"{min(fx):.4g}-{max(fx):.4g}" if fx else ""}
        for t in targets:
            row[f"{y}@{x}={t:g}"] = interpolate_at(fx, fy, t)
        rows.append(row)
    return rows


def to_csv(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    buf = io.StringIO()
    w = csv.DictWriter(buf, list(rows[0]))
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in r.items()})
    return buf.getvalue()


def to_markdown(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no valid points)\n"
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            if isinstance(v, float):
                cells.append("–" if math.isnan(v) else f"{v:.1f}")
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n\n– : the target is outside the measured frontier " \
        "(never extrapolated)\n"
