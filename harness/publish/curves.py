"""Curves from points: series identity, Pareto frontiers, monotone interpolation, cost.

Pure functions (docs/methodology.md §4). Fixed-sequence series include the speculative method
(MTP and non-MTP are separate curves and frontiers); agentic series merge them, keeping the
method on each point for its tooltip. The series definition is the identity's
(`PointIdentity.series_key`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy.interpolate import PchipInterpolator

from harness.record.metrics import PRICE_TIERS
from harness.record.point_record import PointIdentity
from harness.record.spec_names import spec_name
from harness.record.workload_traits import traits_of


def series_key(p: dict[str, Any]) -> tuple[str, ...]:
    """The series of a flat point (as read from disk); a fixed-sequence series is named by its
    speculator's own name (`self_draft`, not the method `draft_model` it shares)."""
    merged = traits_of(p).merges_speculative_curve
    key = tuple(map(str, PointIdentity.from_flat(p).series_key(merged)))
    return (*key[:4], spec_name(p)) if len(key) > 4 else key


def series_label(key: Sequence[str]) -> str:
    model, chip, engine, precision, *spec = key
    label = f"{model} {precision} · {chip} · {engine}"
    if spec and spec[0] != "none":
        label += f" · {spec[0]}"
    return label


def pareto_frontier(
    xs: Sequence[float], ys: Sequence[float], x_higher_better: bool = True,
    y_higher_better: bool = True,
) -> list[int]:
    """Indices of the points no other point dominates, in order of increasing x.

    Dominated = another point at least as good on both axes and better on one. Points with a
    non-positive or missing x are not eligible (InferenceX).
    """
    cand = [i for i, (x, y) in enumerate(zip(xs, ys, strict=True))
            if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
            and x > 0]
    sx = 1.0 if x_higher_better else -1.0
    sy = 1.0 if y_higher_better else -1.0
    # Walk from best x to worst; keep a point only when its y beats everything seen so far.
    order = sorted(cand, key=lambda i: (-sx * xs[i], -sy * ys[i]))
    keep: list[int] = []
    best_y = -math.inf
    for i in order:
        if sy * ys[i] > best_y:
            keep.append(i)
            best_y = sy * ys[i]
    return sorted(keep, key=lambda i: xs[i])


def monotone_curve(xs: Sequence[float], ys: Sequence[float], n: int = 64
                   ) -> tuple[np.ndarray, np.ndarray]:
    """A monotone curve through frontier points, never beyond their x range: the Steffen
    spline the page draws and interpolates with (`steffen_slopes`, d3.curveMonotoneX)."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.size < 2:
        return x, y
    order = np.argsort(x)
    x, y = x[order], y[order]
    grid = np.linspace(x[0], x[-1], n)
    m = steffen_slopes(x.tolist(), y.tolist())
    return grid, np.array([hermite_at(x.tolist(), y.tolist(), m, float(t)) for t in grid])


def interpolate_at(xs: Sequence[float], ys: Sequence[float], target: float) -> float:
    """y on the monotone frontier curve at x = target; NaN outside the measured range."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.size == 0 or target < x.min() or target > x.max():
        return math.nan
    if x.size == 1:
        return float(y[0])
    order = np.argsort(x)
    return float(PchipInterpolator(x[order], y[order])(target))


def cost_columns(p: dict[str, Any]) -> dict[str, float]:
    """$/M tokens, tokens per $, tokens/s per MW and J/token from a point's throughput and its
    chip's price and power (docs/methodology.md §4)."""
    out: dict[str, float] = {}
    tput = _num(p.get("tput_per_gpu"))
    out_tput = _num(p.get("output_tput_per_gpu"))
    for tier in PRICE_TIERS:
        price = _num(p.get(f"chip_cost_{tier}"))
        out[f"cost_per_mtok_{tier}"] = price / (tput * 3600 / 1e6) if tput > 0 else math.nan
        out[f"cost_per_mtok_out_{tier}"] = (price / (out_tput * 3600 / 1e6)
                                            if out_tput > 0 else math.nan)
        out[f"tok_per_dollar_{tier}"] = tput * 3600 / price if price > 0 else math.nan
    kw = _num(p.get("chip_power_kw_all_in"))
    out["tok_s_per_mw"] = tput * 1000 / kw if kw > 0 else math.nan
    out["j_per_tok"] = kw * 1000 / tput if tput > 0 else math.nan
    return out


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def with_costs(points: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**p, **cost_columns(p)} for p in points]


# Interpolation at a target interactivity, as InferenceX-app does it (vngcloud/InferenceX-app:
# packages/app/src/components/calculator/interpolation.ts@25305dc5ecc31c01df1a41159e8637e90dc50ef0):
# the frontier of (interactivity, throughput per GPU) points, then one monotone cubic Hermite
# spline with Steffen slopes (d3.curveMonotoneX) per metric through the frontier's points.

def throughput_frontier(points: Sequence[dict[str, Any]], x_key: str,
                        y_key: str = "tput_per_gpu") -> list[dict[str, Any]]:
    """Valid points on the (x higher better, y higher better) frontier, by increasing x:
    upstream's `paretoFrontUpperLeft` (same x: the higher y stays; then y strictly falls)."""
    cand = [p for p in points if p.get("valid", True) and _finite(p.get(x_key))
            and _finite(p.get(y_key)) and float(p[x_key]) > 0]
    cand.sort(key=lambda p: (float(p[x_key]), -float(p[y_key])))
    front: list[dict[str, Any]] = []
    for p in cand:
        if front and float(front[-1][x_key]) == float(p[x_key]):
            continue  # same x: the first (higher y) already stands
        while front and float(p[y_key]) >= float(front[-1][y_key]):
            front.pop()
        front.append(p)
    return front


def steffen_slopes(xs: Sequence[float], ys: Sequence[float]) -> list[float]:
    n = len(xs)
    if n < 2:
        return [0.0] * n
    h = [xs[i + 1] - xs[i] for i in range(n - 1)]
    s = [(ys[i + 1] - ys[i]) / h[i] if h[i] else 0.0 for i in range(n - 1)]
    m = [0.0] * n
    for i in range(1, n - 1):
        p = (s[i - 1] * h[i] + s[i] * h[i - 1]) / (h[i - 1] + h[i])
        sign = (-1.0 if s[i - 1] < 0 else 1.0) + (-1.0 if s[i] < 0 else 1.0)
        m[i] = sign * min(abs(s[i - 1]), abs(s[i]), 0.5 * abs(p))
    m[0] = (3 * s[0] - m[1]) / 2 if h[0] else m[1]
    m[-1] = (3 * s[-1] - m[-2]) / 2 if h[-1] else m[-2]
    return m


def hermite_at(xs: Sequence[float], ys: Sequence[float], m: Sequence[float],
               t: float) -> float:
    n = len(xs)
    if n == 1 or t <= xs[0]:
        return float(ys[0])
    if t >= xs[-1]:
        return float(ys[-1])
    hi = int(np.searchsorted(np.asarray(xs), t, side="right"))
    lo = hi - 1
    hh = xs[hi] - xs[lo]
    u = (t - xs[lo]) / hh
    return float((2 * u**3 - 3 * u**2 + 1) * ys[lo] + (u**3 - 2 * u**2 + u) * hh * m[lo]
                 + (-2 * u**3 + 3 * u**2) * ys[hi] + (u**3 - u**2) * hh * m[hi])


def interpolate_on_frontier(points: Sequence[dict[str, Any]], target: float, x_key: str,
                            metrics: Sequence[str], out_of_range: str = "clamp",
                            ) -> dict[str, Any] | None:
    """Each metric at x = target along the series' throughput frontier.

    out_of_range "clamp" (upstream's calculator): a target outside the frontier's x range is
    clamped to it and each value to its metric's range on the frontier (`clamped` says so);
    "none" (upstream's historical trends): None outside the range, a lone frontier point only
    at its own x, values floored at 0. None when a frontier point lacks a metric."""
    front = throughput_frontier(points, x_key)
    if not front:
        return None
    xs = [float(p[x_key]) for p in front]
    inside = xs[0] <= target <= xs[-1]
    if out_of_range == "none" and (not inside or (len(xs) == 1 and abs(target - xs[0]) > 1e-6)):
        return None
    t = min(max(target, xs[0]), xs[-1])
    out: dict[str, Any] = {"target": target, "clamped": not inside, "frontier_points": len(xs),
                           "x_range": (xs[0], xs[-1])}
    for key in metrics:
        ys = [_num(p.get(key)) for p in front]
        if not all(math.isfinite(v) for v in ys):
            out[key] = None
            continue
        v = hermite_at(xs, ys, steffen_slopes(xs, ys), t)
        out[key] = min(max(v, min(ys)), max(ys)) if out_of_range == "clamp" else max(0.0, v)
    return out


def canonical_agentic_ids(points: Sequence[dict[str, Any]], y_key: str, y_higher: bool = True,
                          norm_key: str = "p90_e2e_intvty") -> set[str]:
    """Point ids on the E2E-normalized-interactivity frontier of their group (series, precision
    and date), as InferenceX-app's `canonicalNormalizedFrontierIds` (vngcloud/InferenceX-app:
    packages/app/src/components/inference/utils/canonicalFrontier.ts@43fa9b2ca95c209d654d51b4936e0e862f0f1b50).
    A chart on any x axis then draws as optimal only the points on both that axis' frontier and
    this set (upstream's `canonicalParetoIntersection`). Valid points only."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for p in points:
        if p.get("valid", True) and _finite(p.get(norm_key)) and _finite(p.get(y_key)):
            key = (p.get("series") or series_label(series_key(p)),
                   p.get("precision"), str(p.get("date") or "")[:10])
            groups.setdefault(key, []).append(p)
    winners: set[str] = set()
    for pts in groups.values():
        idx = pareto_frontier([float(p[norm_key]) for p in pts], [float(p[y_key]) for p in pts],
                              True, y_higher)
        winners.update(str(pts[i]["point_id"]) for i in idx)
    return winners


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
