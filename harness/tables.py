"""Throughput per GPU at chosen interactivity targets, read off each series' Pareto frontier
with a monotone spline (never extrapolated), as CSV and Markdown."""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from harness.curves import interpolate_at, pareto_frontier, series_key, series_label


def frontier_table(points: Sequence[dict[str, Any]], targets: Sequence[float],
                   x: str = "median_intvty", y: str = "tput_per_gpu") -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        if p.get("valid") and p.get(x) is not None and p.get(y) is not None:
            groups[(p.get("scenario"), series_key(p))].append(p)
    rows = []
    for (scenario, key), pts in sorted(groups.items(), key=lambda kv: str(kv[0])):
        xs, ys = [float(p[x]) for p in pts], [float(p[y]) for p in pts]
        idx = pareto_frontier(xs, ys)
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
