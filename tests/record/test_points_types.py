"""A points.jsonl line of the wrong types costs its own point, never the dashboard.

Through the real CLI on a copy of the committed baseline run (9 points): the bad line is named
(file, line, point, field, fix) in a warning, every other point is drawn; only a file with
nothing readable is an error (exit 2, one line, no traceback)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.record.point_types import line_problem
from harness.record.results import read_points
from tests.helpers import harness

BASELINE = Path("results/baselines/scripted")


def _run_with(tmp_path: Path, edit: dict[int, dict[str, object]], name: str = "run") -> Path:
    """A copy of the baseline run with line i's fields replaced by edit[i]."""
    run = tmp_path / name
    shutil.copytree(BASELINE, run)
    lines = (run / "points.jsonl").read_text().splitlines()
    for i, fields in edit.items():
        lines[i] = json.dumps({**json.loads(lines[i]), **fields})
    (run / "points.jsonl").write_text("\n".join(lines) + "\n")
    return run


@pytest.mark.parametrize("conc", ["8", "eight", 2.5, [1], None, True, -1])
def test_dashboard_skips_a_line_whose_conc_has_the_wrong_type(tmp_path, conc) -> None:
    run = _run_with(tmp_path, {2: {"conc": conc}})
    bad_id = json.loads((run / "points.jsonl").read_text().splitlines()[2])["point_id"]
    out = tmp_path / "d.html"
    r = harness("dashboard", str(run), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    warning, = [x for x in r.stderr.splitlines() if "skipped" in x]
    assert str(run / "points.jsonl") in warning and "line 3" in warning and bad_id in warning
    assert "field 'conc'" in warning and "Fix:" in warning
    pages = json.loads((tmp_path / "d_points" / "pages.json").read_text())
    assert len(pages) == 8 and not any(bad_id in page for page in pages)
    assert out.is_file()


def test_every_line_unreadable_is_one_error(tmp_path) -> None:
    run = _run_with(tmp_path, {i: {"conc": "x"} for i in range(9)})
    for cmd in (["dashboard", str(run), "--out", str(tmp_path / "d.html")],
                ["table", str(run), "--targets", "100"],
                ["gate", "--baseline", str(BASELINE), "--candidate", str(run)]):
        r = harness(*cmd)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        errors = [x for x in r.stderr.splitlines() if x.startswith("harness ")]
        assert len(errors) == 1 and "no readable point in" in errors[0], r.stderr
        assert str(run / "points.jsonl") in errors[0]
        # the bad lines are named, but not all nine: three, then a count
        assert sum("skipped (the other points are read)" in x
                   for x in r.stderr.splitlines()) == 3
        assert "6 more line(s) of the wrong types skipped" in r.stderr


def test_gate_and_table_read_the_other_points(tmp_path) -> None:
    run = _run_with(tmp_path, {0: {"tput_per_gpu": "fast"}})
    r = harness("table", str(run), "--targets", "100")
    assert r.returncode == 0 and "field 'tput_per_gpu'" in r.stderr
    r = harness("gate", "--baseline", str(BASELINE), "--candidate", str(run))
    assert "Traceback" not in r.stderr and "line 1" in r.stderr
    assert r.returncode == 0, r.stdout  # conc 1 keeps its other two repeats


@pytest.mark.parametrize(("fields", "named"), [
    ({"conc": "8"}, "'conc'"),
    ({"model": 7}, "'model'"),
    ({"dp_attention": "no"}, "'dp_attention'"),
    ({"spec_acceptance_length": "1.8"}, "'spec_acceptance_length'"),
    ({"median_intvty": [3]}, "'median_intvty'"),
    ({"valid": "yes"}, "'valid'"),
    ({"validity": [{"name": "x"}]}, "'validity[0].ok'"),
    ({"schema_version": 99}, "newer harness"),
])
def test_line_problem_names_the_field(fields, named) -> None:
    line = {**json.loads((BASELINE / "points.jsonl").read_text().splitlines()[0]), **fields}
    problem = line_problem(line)
    assert problem is not None and named in problem


def test_a_written_point_and_partial_lines_pass() -> None:
    for line in (BASELINE / "points.jsonl").read_text().splitlines():
        assert line_problem(json.loads(line)) is None
    assert line_problem({"point_id": "a", "status": "ok", "x": 1.0}) is None


def test_a_schema_2_line_without_its_identity_is_skipped(tmp_path) -> None:
    run = _run_with(tmp_path, {})
    lines = (run / "points.jsonl").read_text().splitlines()
    d = json.loads(lines[4])
    del d["scenario"]
    lines[4] = json.dumps(d)
    (run / "points.jsonl").write_text("\n".join(lines) + "\n")
    assert len(read_points(run)) == 8
