"""Interpolation at a target interactivity, the canonical agentic frontier and the point-page
figures, each against an independent recomputation (no harness code in the reference)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from harness.publish.curves import (
    canonical_agentic_ids,
    interpolate_on_frontier,
    series_key,
    series_label,
    throughput_frontier,
    with_costs,
)
from harness.publish.dashboards.point_data import point_payload
from harness.publish.ingest import ingest
from harness.record.point_load import load_flat
from tests.publish.dashboard_fixtures import B200_ROWS, build


def _non_dominated(pts: list[dict], xk: str, yk: str) -> list[dict]:
    ok = [p for p in pts if p.get("valid", True) and p.get(xk) and p[xk] > 0
          and p.get(yk) is not None]
    keep = [p for p in ok if not any(q[xk] >= p[xk] and q[yk] >= p[yk]
                                     and (q[xk] > p[xk] or q[yk] > p[yk]) for q in ok)]
    return sorted(keep, key=lambda p: p[xk])


def _steffen(x: np.ndarray, y: np.ndarray, t: float) -> float:
    """d3.curveMonotoneX's tangents (Steffen 1990) and the cubic Hermite basis, written out."""
    h, s = np.diff(x), np.diff(y) / np.diff(x)
    m = np.zeros_like(y)
    if len(x) > 2:
        p = (s[:-1] * h[1:] + s[1:] * h[:-1]) / (h[:-1] + h[1:])
        sgn = np.where(s[:-1] < 0, -1, 1) + np.where(s[1:] < 0, -1, 1)
        m[1:-1] = sgn * np.minimum.reduce([abs(s[:-1]), abs(s[1:]), 0.5 * abs(p)])
    m[0] = (3 * s[0] - m[1]) / 2  # upstream sets the first end before the last: with two
    m[-1] = (3 * s[-1] - m[-2]) / 2  # knots the last tangent sees the first's new value
    k = min(int(np.searchsorted(x, t, side="right")) - 1, len(x) - 2)
    u = (t - x[k]) / h[k]
    basis = [1 - 3 * u**2 + 2 * u**3, u - 2 * u**2 + u**3, 3 * u**2 - 2 * u**3, u**3 - u**2]
    return float(basis[0] * y[k] + basis[1] * h[k] * m[k] + basis[2] * y[k + 1]
                 + basis[3] * h[k] * m[k + 1])


def independent_at(points: list[dict], series: str, target: float, key: str,
                   xk: str = "median_intvty", latest_date: bool = False) -> float:
    """The calculator's value: the series' throughput frontier (its latest date's points when
    asked), target clamped to its range, the metric's spline value clamped to its range on
    the frontier."""
    sp = [p for p in with_costs(points)
          if series_label(series_key(p)) + (" · published" if "-ix-" in p["point_id"] else "")
          == series]
    if latest_date:
        last = max(str(p["date"])[:10] for p in sp)
        sp = [p for p in sp if str(p["date"])[:10] == last]
    front = _non_dominated(sp, xk, "tput_per_gpu")
    x = np.array([p[xk] for p in front], float)
    y = np.array([p[key] for p in front], float)
    if len(x) == 1:
        return float(y[0])
    t = min(max(target, x[0]), x[-1])
    return min(max(_steffen(x, y, t), y.min()), y.max())


@pytest.fixture(scope="module")
def b200(tmp_path_factory):
    out = tmp_path_factory.mktemp("ix") / "ix"
    ingest(B200_ROWS, out)
    return load_flat([out])


def _series(points):
    groups: dict = {}
    for p in with_costs(points):
        groups.setdefault((p["scenario"], series_label(series_key(p))), []).append(p)
    return groups


def test_b200_rows_at_targets_equal_recomputation(b200) -> None:
    checked = 0
    for (_, label), sp in _series(b200).items():
        series = label + " · published"
        for target in (20.0, 35.0, 50.0, 80.0, 400.0):
            got = interpolate_on_frontier(sp, target, "median_intvty",
                                          ["tput_per_gpu", "cost_per_mtok_hyperscaler"])
            for key in ("tput_per_gpu", "cost_per_mtok_hyperscaler"):
                assert got[key] == pytest.approx(independent_at(sp, series, target, key),
                                                 rel=1e-12)
            checked += 1
    assert checked >= 40


def test_out_of_range_none_as_upstream_trends(b200) -> None:
    for sp in _series(b200).values():
        front = throughput_frontier(sp, "median_intvty")
        lo, hi = front[0]["median_intvty"], front[-1]["median_intvty"]
        assert interpolate_on_frontier(sp, hi * 1.01, "median_intvty", ["tput_per_gpu"],
                                       out_of_range="none") is None
        inside = interpolate_on_frontier(sp, (lo + hi) / 2, "median_intvty",
                                         ["tput_per_gpu"], out_of_range="none")
        assert (inside is None) == (len(front) == 1) or lo == hi


def test_frontier_is_valid_points_only_and_upstream_shaped() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        pts = [{"x": float(x), "tput_per_gpu": float(y), "valid": bool(v)}
               for x, y, v in zip(rng.uniform(0, 50, 25).round(), rng.uniform(0, 50, 25).round(),
                                  rng.random(25) > 0.2, strict=True)]
        got = throughput_frontier(pts, "x")
        assert all(p["valid"] for p in got)
        assert [(p["x"], p["tput_per_gpu"]) for p in got] == \
            [(p["x"], p["tput_per_gpu"]) for p in _non_dominated(pts, "x", "tput_per_gpu")]


def test_canonical_agentic_winners_as_upstream_tests() -> None:
    # upstream canonicalFrontier.test.ts: x 10/20/30 at y 100/150/120 -> winners 2 and 3;
    # dates are independent frontiers
    def pt(i, norm, y, date="2026-08-01"):
        return {"point_id": str(i), "p90_e2e_intvty": norm, "tput_per_gpu": y, "valid": True,
                "series": "s", "precision": "fp4", "date": date}
    assert canonical_agentic_ids([pt(1, 10, 100), pt(2, 20, 150), pt(3, 30, 120)],
                                 "tput_per_gpu") == {"2", "3"}
    assert canonical_agentic_ids([pt(1, 50, 500), pt(2, 10, 100, "2026-08-02")],
                                 "tput_per_gpu") == {"1", "2"}
    bad = {**pt(4, 99, 999), "valid": False}
    assert "4" not in canonical_agentic_ids([pt(1, 10, 100), bad], "tput_per_gpu")


def test_point_payload_against_the_records(tmp_path) -> None:
    info = build(tmp_path)
    root = tmp_path / "ours"
    import pandas as pd

    req = pd.read_parquet(root / "requests" / "a2.parquet")
    point = next(p for p in load_flat([root]) if p["point_id"] == "a2")
    d = point_payload(point, root)
    m = req[req.phase == "measured"]
    assert d["requests"] == len(req) and d["measured"] == len(m) == d["ok"]
    ttft = sorted((m.first_token_ts - m.send_ts).tolist())
    assert d["dist"]["ttft"]["cdf_x"] == pytest.approx(ttft)
    tpot = sorted(((m.end_ts - m.first_token_ts) / (m.completion_tokens - 1)).tolist())
    assert d["dist"]["tpot"]["cdf_x"] == pytest.approx(tpot)  # as harness.record.metrics.tpot
    itl = [b - a for c in m.chunk_ts for a, b in itertools.pairwise(c)]
    assert d["dist"]["itl"]["n"] == len(itl)  # never a gap across two requests
    assert d["dist"]["itl"]["p50"] == pytest.approx(float(np.percentile(itl, 50)))
    assert sum(d["over_time"]["tput"]) == pytest.approx(req.completion_tokens.sum())
    assert d["window"] == [0.0, 9.0] and d["series_source"] == "series"
    traces = {t["name"]: t for f in d["series"] for t in f["traces"]}
    # every series once, plus the acceptance the speculative counters imply
    assert len(traces) == len(info["series"].groupby(["source", "device", "name"])) + 1
    assert set(traces["generated tokens/s"]["v"]) == {10.0}  # a counter drawn as its rate
    assert set(traces["AL per interval (1 + accepted/drafts)"]["v"]) == {2.5}
    assert len({f["unit"] for f in d["series"]}) == len(d["series"])  # one family per axis
    # in flight at each bin centre, counted directly
    t0 = 1000.0
    for t, n in zip(d["over_time"]["t"], d["over_time"]["inflight"], strict=True):
        assert n == int(((req.send_ts - t0 <= t) & (req.end_ts - t0 > t)).sum())
    assert np.isfinite(d["timeline"]["send"]).all()
    tl = d["timeline"]  # a wait is the gap since the row's previous request ended
    for i in np.flatnonzero(np.isfinite(tl["wait_from"])):
        before = [tl["end"][j] for j in range(len(tl["send"]))
                  if tl["row"][j] == tl["row"][i] and tl["send"][j] < tl["send"][i]]
        assert tl["wait_from"][i] == max(before) < tl["send"][i]
    # a point without its records (a published row) has numbers only
    assert point_payload({"point_id": "nope"}, root) == {"has_requests": False,
                                                          "series_source": "none", "series": []}
    from harness.publish.dashboards.point_page import _script_json

    assert json.loads(_script_json(d))["requests"] == len(req)  # NaN as null: valid JSON


def test_old_run_without_server_metrics_degrades(tmp_path) -> None:
    build(tmp_path)
    root = tmp_path / "ours"
    (root / "server_metrics" / "a1.json").unlink()
    point = next(p for p in load_flat([root]) if p["point_id"] == "a1")
    d = point_payload(point, root)
    assert d["series"] == [] and d["window"] is None and d["measured"] > 0
    tl = d["timeline"]
    assert min(tl["send"][tl["phase"] == "measured"]) == 0.0


def test_dashboard_files(tmp_path) -> None:
    from harness.publish.dashboards.page import write_dashboard

    info = build(tmp_path)
    out = write_dashboard(info["runs"], tmp_path / "d.html", "t")
    pages = list((tmp_path / "d_points").rglob("*.html"))
    assert len(pages) == len(load_flat(info["runs"]))
    assert {p.name for p in (tmp_path / "d_points").iterdir() if p.is_file()} == \
        {"plotly.min.js", "dom.js", "point.js", "pages.json"}
    assert out.stat().st_size < 6e6  # plotly.js once in the dashboard, once beside the pages
    assert not Path(tmp_path / "d_points" / "ours" / "a2.html").read_text().count("onerror=\"")


def test_unchanged_pages_are_kept_and_changed_ones_rebuilt(tmp_path) -> None:
    from harness.publish.dashboards.page import load_points, payload_points
    from harness.publish.dashboards.point_page import write_point_pages

    info = build(tmp_path)
    out = tmp_path / "d.html"

    def pages():
        return payload_points(load_points(info["runs"]), out)

    assert write_point_pages(pages(), out) == len(pages())
    assert write_point_pages(pages(), out) == 0  # nothing changed
    req = tmp_path / "ours" / "requests" / "a2.parquet"
    req.write_bytes(req.read_bytes())  # new mtime: its page is rebuilt
    assert write_point_pages(pages(), out) == 1
    (tmp_path / "d_points" / "ours" / "a1.html").unlink()  # a lost page is rebuilt
    assert write_point_pages(pages(), out) == 1
