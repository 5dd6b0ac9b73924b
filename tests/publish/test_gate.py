"""The gate on the scripted server: itself passes, 20% slower fails, noise passes, invalid = 2."""

from __future__ import annotations

import json

import pytest

from harness.publish.gate import change_interval, compare_samples
from harness.testing.self_gate import BASELINE, run_check
from tests.helpers import harness

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    return {"base": run_check(root / "base"), "root": root}


def _gate(base, cand, tmp_path, *extra):
    md, js = tmp_path / "gate.md", tmp_path / "gate.json"
    r = harness("gate", "--baseline", str(base), "--candidate", str(cand), "--markdown",
                str(md), "--json", str(js), *extra)
    return r, md.read_text(), json.loads(js.read_text())


def test_a_run_against_itself_passes(runs, tmp_path) -> None:
    r, md, js = _gate(runs["base"], runs["base"], tmp_path)
    assert r.returncode == 0, md
    assert js["verdict"] == "PASS" and "Welch t-test" in js["mode"]
    assert len(js["comparisons"]) >= 9  # 3 points x 3 metrics (+ frontier points)


def test_twenty_percent_slower_fails_and_names_the_points(runs, tmp_path) -> None:
    slow = run_check(runs["root"] / "slow", slowdown=1.25)  # every delay x1.25: -20% tok/s
    r, md, js = _gate(runs["base"], slow, tmp_path)
    assert r.returncode == 1, md
    assert "## Performance gate: **REGRESSION**" in md and "### Regressions" in md
    regressed = {c["what"] for c in js["comparisons"] if c["regression"]}
    for conc in (1, 4, 8):
        assert any(f"conc {conc}" in w for w in regressed), regressed
    tput = next(c for c in js["comparisons"] if c["metric"] == "tput_per_gpu"
                and c["what"].endswith("conc 1"))
    assert tput["change"] == pytest.approx(-0.2, abs=0.05) and tput["p_value"] < 0.05
    lo, hi = tput["interval"]  # from the repeats: around the change, below zero
    assert lo < tput["change"] < hi < 0
    assert "| interval (95%) |" in md and f"[{100 * lo:+.1f}%, {100 * hi:+.1f}%]" in md


def test_noise_within_the_threshold_passes(runs, tmp_path) -> None:
    noisy = run_check(runs["root"] / "noisy", slowdown=1.02)
    r, md, _ = _gate(runs["base"], noisy, tmp_path)
    assert r.returncode == 0, md


def test_an_invalid_run_exits_2(runs, tmp_path) -> None:
    bad = run_check(runs["root"] / "bad", fail_every=5)  # 20% of requests fail
    r, md, js = _gate(runs["base"], bad, tmp_path)
    assert r.returncode == 2, md
    assert js["verdict"] == "INVALID INPUT" and js["invalid"]
    assert "invalid in the candidate" in md and "requests failed" in md


def test_single_runs_use_the_threshold_alone() -> None:
    change, p, reg, note = compare_samples([100.0], [90.0], True, 0.05, 0.05)
    assert reg and p is None and "threshold only" in note and change == pytest.approx(-0.1)
    change, p, reg, _ = compare_samples([100, 101, 99], [97, 98, 96], True, 0.05, 0.05)
    assert not reg  # significant but only -3%: below the threshold
    change, p, reg, _ = compare_samples([100, 130, 70], [90, 120, 60], True, 0.05, 0.05)
    assert not reg and p > 0.05  # -10% but not significant


def test_a_change_carries_its_interval_from_repeats() -> None:
    from scipy import stats

    b, c = [100.0, 103.0, 98.0, 101.0], [95.0, 97.0, 92.0, 96.0]
    lo, hi = change_interval(b, c, True, 0.05)
    change, p, _, _ = compare_samples(b, c, True, 0.05, 0.05)
    assert lo < change < hi and hi < 0 and p < 0.05  # excludes 0 exactly when significant
    # the same interval from scipy's Welch test on the difference, over the baseline mean
    ci = stats.ttest_ind(c, b, equal_var=False).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ci.low / 100.5, ci.high / 100.5))
    # lower-is-better metrics: signed so that negative = worse, as the change is
    assert change_interval(b, c, False, 0.05) == pytest.approx((-hi, -lo))
    wide = change_interval([100, 130, 70], [90, 120, 60], True, 0.05)
    assert wide[0] < 0 < wide[1]  # -10% but not significant: the interval holds 0
    assert change_interval([100.0], [90.0], True, 0.05) is None


def test_single_runs_say_their_changes_have_no_interval(runs, tmp_path) -> None:
    one = tmp_path / "one"
    one.mkdir()
    lines = (runs["base"] / "points.jsonl").read_text().splitlines()
    kept = [ln for ln in lines if json.loads(ln).get("repeat", 0) == 0]
    assert 0 < len(kept) < len(lines)  # the self gate's run has repeats; keep one
    (one / "points.jsonl").write_text("\n".join(kept) + "\n")
    r, md, js = _gate(one, one, tmp_path)
    assert r.returncode == 0, md
    assert "no change carries an interval" in js["mode"] and "no change carries" in md
    assert all(c["interval"] is None for c in js["comparisons"])
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "conc" in ln]
    assert rows and all("| none: single run |" in ln for ln in rows)


def test_the_project_gates_itself_against_its_committed_baseline(runs, tmp_path) -> None:
    assert (BASELINE / "points.jsonl").is_file(), "refresh with: make baseline"
    r, md, _ = _gate(BASELINE, runs["base"], tmp_path)
    assert r.returncode == 0, md
