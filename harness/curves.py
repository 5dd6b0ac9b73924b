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

from harness.metrics import PRICE_TIERS
from harness.point_record import PointIdentity


def series_key(p: dict[str, Any]) -> tuple[str, ...]:
    """The series of a flat point (as read from disk)."""
    return tuple(map(str, PointIdentity.from_flat(p).series_key()))


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
    """A monotone (PCHIP) curve through frontier points, never beyond their x range."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.size < 2:
        return x, y
    order = np.argsort(x)
    x, y = x[order], y[order]
    grid = np.linspace(x[0], x[-1], n)
    return grid, PchipInterpolator(x, y)(grid)


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
