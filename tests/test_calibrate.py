"""`harness calibrate` on the embedded engine: real n-gram acceptance on the shipped agentic
text, written in the table's format, reproduced by a second run with the same seed."""

from __future__ import annotations

import pytest

from harness.spec.acceptance import load_table
from tests.helpers import harness

pytestmark = pytest.mark.slow


def _calibrate(tmp_path, name):
    out = tmp_path / name
    out.mkdir()
    r = harness("calibrate", "--k", "2", "4", "--turns", "2", "--context-tokens", "512",
                "--max-tokens", "24", "--seed", "7", "--out", str(out / "calibrated.csv"),
                "--work-dir", str(tmp_path / f"work-{name}"), timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return {(x.k): x for x in load_table(out)}


def test_calibration_writes_rows_and_reproduces(tmp_path) -> None:
    first = _calibrate(tmp_path, "a")
    second = _calibrate(tmp_path, "b")
    assert sorted(first) == [2, 4]
    for k, row in first.items():
        assert (row.model, row.speculator, row.thinking) == ("smollm2-135m", "ngram", "off")
        assert 1.0 < row.al <= k + 1
        assert row.engine.startswith("llamacpp xllamacpp") and row.measured_on
        assert "SWE-agent" in row.dataset and "temperature 0" in row.sampling
        assert "drafts=" in row.notes
        assert second[k].al == pytest.approx(row.al, rel=0.02)  # same seed: within noise
    assert first[4].al > first[2].al  # a longer draft accepts more per step here


def test_shipped_calibration_covers_k_1_to_8() -> None:
    rows = [r for r in load_table() if r.model == "smollm2-135m" and r.speculator == "ngram"]
    assert sorted(r.k for r in rows) == list(range(1, 9))
    assert all(r.source == "harness calibrate" for r in rows)
