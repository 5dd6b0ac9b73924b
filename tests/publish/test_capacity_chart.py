"""The dashboard's capacity chart (harness/publish/dashboards/capacity.py): every point the
search measured at its load, passing and failing apart, the SLO as a horizontal line and the
boundary loads as vertical ones."""

from __future__ import annotations

import json

from harness.publish.dashboards.capacity import capacity_figures, read_searches


def test_the_capacity_chart_draws_the_boundary_and_the_slo(tmp_path) -> None:
    run = tmp_path / "run"
    (run / "search").mkdir(parents=True)
    ttft = {1: 0.2, 2: 0.4, 4: 0.9, 3: 0.6}
    points = [{"_root": str(run), "point_id": f"c{c}-r0", "valid": True, "p99_ttft": t}
              for c, t in ttft.items()]
    (run / "search" / "job0.json").write_text(json.dumps({
        "axis": "concurrency", "criteria": {"p99_ttft_ms": 500}, "highest_passing": 2,
        "lowest_failing": 3, "breaching_metric": "p99_ttft_ms", "num_points": 4,
        "points": [{"load": c, "point_id": f"c{c}-r0"} for c in ttft]}))
    [fig] = capacity_figures(read_searches([run]), points)
    passing, failing = fig["data"]
    assert sorted(passing["x"]) == [1, 2] and sorted(failing["x"]) == [3, 4]
    assert sorted(failing["y"]) == [600.0, 900.0]  # ms, the bound's unit
    hline, v_pass, v_fail = fig["layout"]["shapes"]
    assert hline["y0"] == hline["y1"] == 500
    assert (v_pass["x0"], v_fail["x0"]) == (2, 3)
    assert "highest passing 2, lowest failing 3" in fig["layout"]["title"]["text"]
