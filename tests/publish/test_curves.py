"""Frontiers, monotone curves and cost columns against independent recomputation."""

from __future__ import annotations

import numpy as np
import pytest

from harness.publish.curves import cost_columns, interpolate_at, monotone_curve, pareto_frontier


def _brute_force(xs, ys):
    keep = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if x <= 0:
            continue
        dominated = any(
            (xs[j] >= x and ys[j] >= y and (xs[j] > x or ys[j] > y))
            for j in range(len(xs)) if j != i
        )
        if not dominated:
            keep.append(i)
    return sorted(keep, key=lambda i: xs[i])


@pytest.mark.parametrize("seed", range(20))
def test_frontier_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    xs = rng.uniform(-5, 100, 30).round(1).tolist()
    ys = rng.uniform(0, 100, 30).round(1).tolist()
    assert pareto_frontier(xs, ys) == _brute_force(xs, ys)


def test_lower_is_better_axes() -> None:
    # cost (lower better) against latency... x: e2el (lower better), y: $/Mtok (lower better)
    xs, ys = [1.0, 2.0, 3.0, 1.5], [5.0, 2.0, 1.0, 6.0]
    assert pareto_frontier(xs, ys, x_higher_better=False, y_higher_better=False) == [0, 1, 2]


def test_monotone_curve_does_not_overshoot() -> None:
    xs, ys = [1, 2, 3, 10], [100, 99, 20, 19]
    _, gy = monotone_curve(xs, ys, n=200)
    assert np.all(np.diff(gy) <= 1e-9)  # decreasing data gives a decreasing curve
    assert gy.max() <= 100 + 1e-9 and gy.min() >= 19 - 1e-9
    assert np.isnan(interpolate_at(xs, ys, 11.0))  # never extrapolated
    assert interpolate_at(xs, ys, 2.0) == pytest.approx(99.0)


def test_cost_columns() -> None:
    p = {"tput_per_gpu": 1000.0, "output_tput_per_gpu": 100.0, "chip_power_kw_all_in": 1.71,
         "chip_cost_hyperscaler": 1.73, "chip_cost_neocloud": 2.07, "chip_cost_rental_3yr": 2.6}
    c = cost_columns(p)
    assert c["cost_per_mtok_hyperscaler"] == pytest.approx(1.73 / (1000 * 3600 / 1e6))
    assert c["cost_per_mtok_out_rental_3yr"] == pytest.approx(2.6 / (100 * 3600 / 1e6))
    assert c["tok_per_dollar_neocloud"] == pytest.approx(1000 * 3600 / 2.07)
    assert c["tok_s_per_mw"] == pytest.approx(1000 * 1000 / 1.71)
    assert c["j_per_tok"] == pytest.approx(1710 / 1000)
