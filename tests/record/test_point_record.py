"""Point records: today's files load (a committed v1 run), draw and gate; identity decides
matching, settings decide comparability; the catalogue decides directions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from harness.publish.dashboards.page import render_page
from harness.publish.gate import gate
from harness.publish.tables import frontier_table
from harness.record.metrics import CATALOGUE, metric
from harness.record.point_load import load_flat, load_records
from harness.record.point_record import SCHEMA_VERSION, PointRecord
from tests.helpers import harness

V1 = Path(__file__).parents[1] / "fixtures" / "results_v1"


def _lines(run: Path) -> list[dict]:
    return [orjson.loads(x) for x in (run / "points.jsonl").read_bytes().splitlines()]


def test_a_v1_run_loads_as_records_with_their_verdicts() -> None:
    recs = load_records([V1])
    raw = _lines(V1)
    assert len(recs) == len(raw) == 5
    for r, line in zip(recs, raw, strict=True):
        assert "schema_version" not in line  # the fixture really is the old format
        assert r.schema_version == SCHEMA_VERSION
        assert r.point_id == line["point_id"] == r.identity.point_id()  # ids unchanged
        assert r.valid == line["valid"] and r.reasons == line["invalid_reasons"]
        for k in ("median_ttft", "tput_per_gpu", "p99.9_itl"):
            assert r.get(k) == line[k] and k in r.metrics
    invalid = [r for r in recs if not r.valid]
    assert {r.identity.conc for r in invalid} == {1, 2}  # prompt mismatch, short agentic


def test_flat_lines_round_trip_without_losing_a_key() -> None:
    for line in _lines(V1):
        flat = PointRecord.from_flat(line).flat()
        assert set(line) <= set(flat)
        assert all(flat[k] == line[k] for k in line)
        again = PointRecord.from_flat(flat)
        assert again.flat() == flat and again.validity == PointRecord.from_flat(line).validity


def test_a_newer_schema_is_refused_with_a_fix() -> None:
    line = {**_lines(V1)[0], "schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(ValueError, match="upgrade"):
        PointRecord.from_flat(line)


def test_the_v1_run_draws() -> None:
    page = render_page(load_flat([V1]), "fixture")
    assert page.count('"point_id"') == 5 and "agentic-weka-cpu" in page


def test_the_v1_run_gates_against_itself(tmp_path: Path) -> None:
    recs = load_records([V1])
    rep = gate(recs, recs, only={"conc": "4"})
    assert rep.exit_code == 0 and rep.verdict == "PASS" and rep.comparisons
    full = gate(recs, recs)  # the invalid points are reported, not compared
    assert full.exit_code == 2 and len(full.invalid) == 3


def _copy_with(tmp: Path, edit) -> Path:
    out = tmp / "cand"
    shutil.copytree(V1, out)
    lines = [edit(dict(x)) for x in _lines(V1)]
    (out / "points.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines
                                                if x is not None))
    return out


def test_different_scenario_settings_are_not_comparable(tmp_path: Path) -> None:
    def edit(p):
        if p["conc"] == 4:
            p["scenario_settings"] = "0000000000"
        return p

    cand = _copy_with(tmp_path, edit)
    r = harness("gate", "--baseline", str(V1), "--candidate", str(cand), "--only", "conc=4",
                "--json", str(tmp_path / "g.json"))
    js = json.loads((tmp_path / "g.json").read_text())
    assert r.returncode == 2 and js["verdict"] == "NOT COMPARABLE", r.stdout
    assert "scenario settings differ" in js["not_comparable"][0] and not js["comparisons"]


def test_a_baseline_point_missing_from_the_candidate_fails(tmp_path: Path) -> None:
    cand = _copy_with(tmp_path, lambda p: None if p["conc"] == 4 else p)
    r = harness("gate", "--baseline", str(V1), "--candidate", str(cand),
                "--json", str(tmp_path / "g.json"))
    js = json.loads((tmp_path / "g.json").read_text())
    assert r.returncode == 1 and js["verdict"] == "MISSING POINTS"
    assert any("conc 4" in m for m in js["missing"])
    # narrowed to what both have, the same comparison is judged on what remains
    r = harness("gate", "--baseline", str(V1), "--candidate", str(cand), "--only", "conc=2")
    assert r.returncode == 2 and "MISSING" not in r.stdout  # conc 2 is invalid on both


def test_a_lower_is_better_x_builds_a_lower_is_better_frontier() -> None:
    assert metric("median_e2el").direction == "lower"
    recs = load_records([V1])
    valid = [r for r in recs if r.valid and r.identity.scenario_kind == "fixed"]
    best = min(valid, key=lambda r: r.get("median_e2el"))
    rows = frontier_table(recs, [best.get("median_e2el")], x="median_e2el")
    fixed = next(r for r in rows if r["scenario"].startswith("fixed-128x64"))
    # the point with the lowest latency is on the frontier, at its own throughput
    assert fixed[f"tput_per_gpu@median_e2el={best.get('median_e2el'):g}"] == pytest.approx(
        best.get("tput_per_gpu"))
    r = harness("table", str(V1), "--targets", "0.1", "--x", "median_e2el")
    assert r.returncode == 0 and "ISL 128, OSL 64" in r.stdout


def test_every_emitted_metric_key_is_in_the_catalogue() -> None:
    for r in load_records([V1]):
        for k, v in r.flat().items():
            if k.startswith(("mean_", "median_", "std_", "p9", "num_")) and isinstance(
                    v, int | float) and not isinstance(v, bool):
                assert k in CATALOGUE, k


def test_scenario_fields_added_later_keep_old_fixed_point_ids() -> None:
    """The agentic replay's and the corpus's scenario fields (added after schema 2) leave a
    fixed-sequence point's scenario hash as it was, so its baselines and resumable runs stay
    comparable; an agentic scenario's hash does change (its replay did)."""
    import dataclasses

    import orjson

    from harness.config.compose import compose_sweep
    from harness.record.identity import scenario_settings_hash
    from harness.testing.self_gate import BASELINE, SWEEP_ARGS

    sc = compose_sweep(["engine=endpoint", "engine.url=http://127.0.0.1:1", *SWEEP_ARGS])
    recorded = {orjson.loads(line)["scenario_settings"]
                for line in (BASELINE / "points.jsonl").read_text().splitlines()}
    assert recorded == {scenario_settings_hash(sc)}
    moved = dataclasses.replace(sc, scenario=dataclasses.replace(sc.scenario, join_rule="x"))
    assert scenario_settings_hash(moved) != scenario_settings_hash(sc)  # set: in the hash
