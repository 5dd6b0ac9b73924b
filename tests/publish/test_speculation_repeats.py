"""Speculation ratios admit their sample: from one repeat `harness speculation` says they have
no interval (the table, the crossover and a sentence above them); from repeats they carry one
standard error, at equal concurrency and along each repeat's frontiers."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.publish.speedup import equal_interactivity, group_series
from harness.record.results import RunDir
from tests.helpers import harness


def _pt(conc: int, intvty: float, spec: str = "none", rep: int = 0,
        scale: float = 1.0) -> dict:
    return {"point_id": f"c{conc}-r{rep}-{spec}", "run_id": "run", "model": "m", "chip": "cpu",
            "engine": "llamacpp", "precision": "q4", "scenario": "s", "scenario_kind": "fixed",
            "isl": 128, "osl": 64, "conc": conc, "repeat": rep, "valid": True, "status": "ok",
            "spec_method": spec, "spec_k": 4 if spec != "none" else 0,
            "spec_acceptance_mode": "real" if spec != "none" else "none",
            "median_intvty": intvty, "tput_per_gpu": scale * intvty * conc}


# plain and n-gram at three loads: n-gram faster at 1, slower at 2 and 4 (crosses)
ONE = [_pt(1, 100), _pt(2, 80), _pt(4, 60),
       _pt(1, 107, "ngram"), _pt(2, 76, "ngram"), _pt(4, 48, "ngram")]
TWO = [*ONE, _pt(1, 100, rep=1), _pt(2, 80, rep=1), _pt(4, 60, rep=1),
       _pt(1, 113, "ngram", 1), _pt(2, 84, "ngram", 1), _pt(4, 48, "ngram", 1)]


def _run(tmp_path: Path, points: list[dict]) -> Path:
    run = RunDir.open(tmp_path, "run")
    for p in points:
        run.append_point(p)
    return run.root


def test_a_one_repeat_run_says_its_ratios_have_no_interval(tmp_path: Path) -> None:
    r = harness("speculation", str(_run(tmp_path, ONE)), "--csv", str(tmp_path / "s.csv"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # 3 loads at equal concurrency, 4 targets along the frontiers
    assert out.startswith("**Every comparison below comes from one repeat** (7 of 7 ratio "
                          "rows): its ratios and crossovers have no interval")
    rows = [line for line in out.splitlines() if "| ngram k=4 (real) | " in line]
    eq = [line for line in rows if "| exact |" in line]
    assert len(eq) == 3 and all("| none: one repeat |" in line for line in eq)
    assert all(" ± " not in line for line in eq)
    cross = next(line for line in rows if "(no interval: one repeat)" in line)
    assert "1.5 (no interval: one repeat)" in cross  # crosses between loads 1 and 2
    assert "none: one repeat" in (tmp_path / "s.csv").read_text()


def test_repeats_give_each_ratio_and_crossover_an_interval(tmp_path: Path) -> None:
    r = harness("speculation", str(_run(tmp_path, TWO)))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "from one repeat" not in out and "none: one repeat" not in out
    eq = [line for line in out.splitlines() if "| exact |" in line]
    assert len(eq) == 3 and all("| ± 1 SE over 2/2 repeats |" in line for line in eq)
    # load 2: ratios 76/80 and 84/80, mean 1.0, SE (delta method) 4/80
    assert any("| 1 ± 0.050 |" in line for line in eq)
    cross = next(line for line in out.splitlines() if "| ngram k=4 (real) | 2 [" in line)
    assert "(no interval" not in cross


def test_equal_interactivity_interval_from_each_repeats_frontiers() -> None:
    # n-gram's throughput at each interactivity: 2x plain's in repeat 0, 2.2x in repeat 1
    # (the frontier spline scales with its points): per-repeat ratios 2.0 and 2.2, SE 0.1
    plain = [_pt(c, v, rep=rep) for rep in (0, 1) for c, v in ((1, 100), (2, 80), (4, 60))]
    spec = [_pt(c, v, "ngram", rep, 2.0 + 0.2 * rep)
            for rep in (0, 1) for c, v in ((1, 100), (2, 80), (4, 60))]
    row = equal_interactivity(group_series([*plain, *spec]), [70.0])[0]
    assert row["tput_ratio_se"] == pytest.approx(0.1)
    assert row["interval"] == "± 1 SE over 2 repeats"
    one = equal_interactivity(group_series([p for p in plain + spec if p["repeat"] == 0]),
                              [70.0])[0]
    assert one["tput_ratio"] == pytest.approx(2.0)
    assert one["tput_ratio_se"] is None and one["interval"] == "none: one repeat"


@pytest.mark.slow
def test_the_dashboards_speculation_view_says_so_too(browser, tmp_path: Path) -> None:
    from harness.publish.dashboards.page import write_dashboard

    out = tmp_path / "d.html"
    write_dashboard([_run(tmp_path, ONE)], out, "one repeat")
    pg = browser.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(out.as_uri())
    pg.wait_for_function("document.getElementById('chart').data !== undefined")
    pg.select_option("#view", "speculation")
    pg.wait_for_selector("#spec-one-repeat")
    note = pg.text_content("#spec-one-repeat")
    cells = pg.evaluate("""() => [...document.querySelectorAll(
        '.spec-table[data-table=equal_concurrency] td[data-col=interval]')]
        .map(c => c.textContent)""")
    pg.close()
    assert note.startswith("Every comparison below comes from one repeat (7 of 7 ratio rows)")
    assert cells == ["none: one repeat"] * 3 and errors == []
