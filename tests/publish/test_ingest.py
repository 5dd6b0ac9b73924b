"""InferenceX's published rows in our format: interactivity, cost and frontiers match an
independent recomputation, row by row."""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest

from harness.publish.curves import cost_columns, pareto_frontier
from harness.publish.ingest import IngestError, ingest
from harness.record.results import read_points
from tests.helpers import harness

ROWS = "scenarios/reference/dsr1_b200_rows.json"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    out = tmp_path_factory.mktemp("ix") / "inferencex"
    r = harness("ingest-inferencex", ROWS, "--out", str(out))
    assert r.returncode == 0 and "60 points written" in r.stdout, r.stderr
    with open(ROWS) as f:
        return json.load(f), read_points(out)


def _gpu_constants():
    """The 2026-07 B200 row of the shared GPU table, read independently of the chip recipes."""
    with open("recipes/chip/source/gpu_specs_inferencex_app.csv") as f:
        for r in csv.DictReader(f):
            if (r["gpu"], r["vintage"]) == ("b200", "2026-07"):
                return r
    return None


def test_every_row_becomes_a_point_with_its_identity(ingested) -> None:
    rows, points = ingested
    assert len(points) == len(rows) == 60
    assert {p["engine"] for p in points} == {"sglang", "trtllm"}
    assert {p["model"] for p in points} == {"deepseek-r1"}
    assert {p["scenario"] for p in points} == {"fixed-1k1k", "fixed-1k8k", "fixed-8k1k"}


def test_interactivity_is_one_over_tpot_per_statistic_row_by_row(ingested) -> None:
    rows, points = ingested
    by_url = {(p["source"], p["conc"], p["precision"], p["isl"], p["osl"]): p for p in points}
    for row in rows:
        p = by_url[(row["run_url"], row["conc"], row["precision"], row["isl"], row["osl"])]
        m = row["metrics"]
        for stat in ("mean", "median", "p90", "p99"):
            if f"{stat}_tpot" in m:
                assert p[f"{stat}_intvty"] == pytest.approx(1 / m[f"{stat}_tpot"], rel=1e-6)
        assert p["tput_per_gpu"] == pytest.approx(
            m["input_tput_per_gpu"] + m["output_tput_per_gpu"], rel=1e-6)


def test_cost_and_power_columns_row_by_row(ingested) -> None:
    _, points = ingested
    g = _gpu_constants()
    for p in points:
        c = cost_columns(p)
        tput = p["tput_per_gpu"]
        for tier, col in (("hyperscaler", "costh_usd_per_gpu_hr_hyperscaler"),
                          ("neocloud", "costn_usd_per_gpu_hr_neocloud"),
                          ("rental_3yr", "costr_usd_per_gpu_hr_3yr_rental")):
            price = float(g[col])
            assert c[f"cost_per_mtok_{tier}"] == pytest.approx(price * 1e6 / (tput * 3600))
            assert c[f"tok_per_dollar_{tier}"] == pytest.approx(tput * 3600 / price)
        kw = float(g["power_kw_all_in_per_gpu"])
        assert c["tok_s_per_mw"] == pytest.approx(tput * 1000 / kw)
        assert c["j_per_tok"] == pytest.approx(kw * 1000 / tput)


def test_frontiers_match_a_brute_force_recount(ingested) -> None:
    _, points = ingested
    series = defaultdict(list)
    for p in points:
        series[(p["scenario"], p["engine"], p["precision"], p["spec_method"])].append(p)
    assert len(series) >= 10
    for pts in series.values():
        xs = [p["median_intvty"] for p in pts]
        ys = [p["tput_per_gpu"] for p in pts]
        brute = {i for i in range(len(pts)) if not any(
            xs[j] >= xs[i] and ys[j] >= ys[i] and (xs[j] > xs[i] or ys[j] > ys[i])
            for j in range(len(pts)))}
        assert set(pareto_frontier(xs, ys)) == brute


def test_bad_rows_are_a_clear_error(tmp_path) -> None:
    bad = tmp_path / "rows.json"
    bad.write_text(json.dumps([{"hardware": "b200", "metrics": {}}]))
    with pytest.raises(IngestError, match="row 0: lacks"):
        ingest(bad, tmp_path / "out")
    with open(ROWS) as f:
        row = json.load(f)[0]
    bad.write_text(json.dumps([{**row, "hardware": "tpu9"}]))
    with pytest.raises(IngestError, match=r"row 0: unknown hardware 'tpu9' \(known: .*b200"):
        ingest(bad, tmp_path / "out2")
