"""A run whose plain and n-gram points are all invalid (a busy client's stamp error), as the
default run on a loaded host leaves it: the speculation and compare views draw no empty chart,
say the matching points are invalid and name the CLI flag that counts them, and that flag is
real (`harness speculation --include-invalid` gives the rows the page does not draw)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.record.results import RunDir
from tests.helpers import harness
from tests.publish.dashboard_fixtures import base_point, records

pytestmark = pytest.mark.slow
REASON = ["client stamp error p99 1.2 ms > 1 ms"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("empty")
    run = RunDir.open(root, "ours")
    rng = np.random.default_rng(7)
    for conc in (1, 2):
        for spec, speed in (("none", 1.0), ("ngram", 1.4)):
            kw = {"spec_method": "ngram", "spec_k": 4} if spec != "none" else {}
            p = base_point(f"c{conc}-r0-{spec}", "fixed", conc, 300.0 * conc * speed,
                           40.0 * speed / conc, valid=False, invalid_reasons=REASON,
                           median_tpot=0.025 / speed, **kw)
            run.write_requests(p["point_id"], records(14, rng, False))
            run.append_point(p)
    assert main(["dashboard", str(run.root), "--out", str(root / "d.html")]) == 0
    return root


def _view(browser, site: Path, view: str):
    tab = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto((site / "d.html").as_uri() + f"#view={view}&scenario=fixed-1k1k")
    tab.wait_for_function("document.getElementById('chart') !== null")
    tab.wait_for_timeout(300)
    assert errors == []
    return tab


def test_speculation_view_draws_no_empty_chart_and_says_the_points_are_invalid(
        site: Path, browser) -> None:
    tab = _view(browser, site, "speculation")
    tab.wait_for_selector("#spec-empty")
    assert tab.locator("#spec-chart").is_hidden()
    assert tab.locator("#spec-chart .main-svg").count() == 0  # no axes over nothing
    text = tab.inner_text("#spec-empty")
    tab.close()
    assert "the matching points in this scenario are invalid" in text, text
    assert "plain 2 of 2, speculative 2 of 2" in text
    assert "harness speculation --include-invalid" in text
    assert "No speculative series with a matching plain series" not in text


def test_compare_view_draws_no_empty_bars_and_says_the_points_are_invalid(
        site: Path, browser) -> None:
    tab = _view(browser, site, "compare")
    tab.wait_for_selector("#compare-empty:not([hidden])")
    assert tab.locator("#compare-bars").is_hidden()
    assert tab.locator("#compare-bars .main-svg").count() == 0
    text = tab.inner_text("#compare-empty")
    tab.close()
    assert "the matching points in view are all invalid" in text, text
    assert "harness speculation --include-invalid" in text


def test_the_flag_the_pages_name_counts_the_invalid_points(site: Path) -> None:
    plain = harness("speculation", str(site / "ours"), timeout=300)
    counted = harness("speculation", "--include-invalid", str(site / "ours"), timeout=300)
    assert counted.returncode == 0, counted.stderr
    assert "ngram k=4" in counted.stdout and "ngram k=4" not in plain.stdout
    assert "(published)" not in counted.stdout  # our own points, though they name no mode
