"""A plain and an n-gram point at one load, as a reader meets them: file names that say which
is which (the speculator and k, not only a hash), a heading that names the speculator once, no
"Speculator k 0" on the plain page, and "the plain point at this load is invalid" where it is."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli.main import main
from harness.record.results import RunDir
from tests.publish.dashboard_fixtures import base_point, records

pytestmark = pytest.mark.slow
PLAIN, SPEC = "c2-r0-404f9fa6dafd", "c2-r0-1a72523e3709"
SPEC_PAGE = "c2-ngram-k4-r0-1a72523e3709.html"


# As the recorder writes them (harness/record/validity.py, bench_rules.py): the message is
# worded for failure whatever the outcome, the observed value in the rule's own unit
RULES = [
    {"name": name, "ok": ok, "observed": obs, "bound": bound, "message": "m", "remedy": "r",
     "fatal": False}
    for name, ok, obs, bound in (
        ("prompt_lengths", True, 0, "0"), ("usage_reported", True, 0, "0"),
        ("bounded_outputs", True, 0, "0"), ("any_request_succeeded", True, 12, ">= 1"),
        ("host_steal", True, 0.0006956, "<= 5% of CPU time"),
        ("client_queue_delay", True, 0.6689, "<= 10 ms"),
        ("client_stamp_error", False, 1.2, "<= 1 ms"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("names")
    run = RunDir.open(root, "ours")
    rng = np.random.default_rng(5)
    plain = base_point(PLAIN, "fixed", 2, 900.0, 50.0, valid=False, schema_version=2,
                       validity=RULES,
                       invalid_reasons=["client stamp error p99 1.2 ms > 1 ms"])
    spec = base_point(SPEC, "fixed", 2, 1500.0, 80.0, spec_method="ngram", spec_k=4,
                      spec_realised_al=3.075, spec_drafts=200, spec_draft_tokens=800,
                      spec_accepted_tokens=415, server_generation_tokens=1300,
                      total_output_tokens=1300, median_tpot=0.02)
    for p in (plain, spec):
        run.write_requests(p["point_id"], records(14, rng, False))
        run.append_point(p)
    (run.root / "series").mkdir()
    _host_series().to_parquet(run.root / "series" / f"{PLAIN}.parquet")
    assert main(["dashboard", str(run.root), "--out", str(root / "d.html")]) == 0
    return root


def _host_series() -> pd.DataFrame:
    """The host's CPU series as harness/telemetry/host.py series_rows writes them."""
    rows = [{"t_s": float(t), "source": "host", "device": "", "name": name, "value": v}
            for t in range(-2, 9)
            for name, v in (("ours_cpu", 1.1), ("foreign_cpu", 0.2), ("foreign_procs_cpu", 0.15),
                            ("kernel_cpu", 0.05), ("steal_share", 0.001))]
    return pd.DataFrame(rows)


def test_page_files_name_the_speculator_and_k(site: Path) -> None:
    pages = sorted(p.name for p in (site / "d_points" / "ours").glob("*.html"))
    assert pages == [SPEC_PAGE, f"{PLAIN}.html"]
    # every link the dashboard and the pages carry reaches a page that exists
    links = set(re.findall(r'd_points/ours/[^"\\]+\.html', (site / "d.html").read_text()))
    for page in (site / "d_points" / "ours").glob("*.html"):
        links |= {f"d_points/{m}" for m in
                  re.findall(r'"page":\s*"(?:\.\./)*(?:d_points/)?(ours/[^"]+\.html)"',
                             page.read_text())}
    assert {f"d_points/ours/{n}" for n in pages} <= links
    assert all((site / link).is_file() for link in links), links


def _open(browser, page: Path):
    tab = browser.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(page.as_uri())
    tab.wait_for_function("document.getElementById('summary').children.length > 0")
    assert errors == []
    return tab


def test_the_speculative_page_names_its_speculator_once_and_why_it_has_no_cost(
        site: Path, browser) -> None:
    tab = _open(browser, site / "d_points" / "ours" / SPEC_PAGE)
    h1 = tab.inner_text("h1")
    assert h1 == "smollm2-135m q4_1 · cpu · llamacpp · ngram k=4 · fixed-1k1k · concurrency 2"
    why = tab.inner_text("#spec-why")
    assert "the plain point at this load is invalid" in why, why
    assert "no plain point" not in why
    summary = tab.inner_text("#summary")
    assert re.search(r"Speculator k[^\n]*\t4", summary), summary
    # the link back to the dashboard still reaches it
    hrefs = tab.eval_on_selector_all("a[href$='.html']", "as => as.map(a => a.href)")
    tab.close()
    assert any(h.endswith("/d.html") for h in hrefs), hrefs


def test_the_plain_page_shows_no_speculator_k(site: Path, browser) -> None:
    tab = _open(browser, site / "d_points" / "ours" / f"{PLAIN}.html")
    summary, h1 = tab.inner_text("#summary"), tab.inner_text("h1")
    tab.close()
    assert "Speculator k" not in summary and "ngram" not in h1
    assert "Throughput" in summary or "throughput" in summary  # the table is there


def test_the_export_names_a_clash_by_speculator_and_k(site: Path) -> None:
    from harness.publish.exports import load_run
    from harness.publish.exports.inferencex_fixed import result_filenames

    names = result_filenames(load_run(site / "ours"))
    assert names[SPEC].endswith(f"_conc2_cpu_{SPEC_PAGE.removesuffix('.html')}"), names
    assert names[PLAIN].endswith(f"_conc2_cpu_{PLAIN}"), names


def test_validity_rows_read_in_the_bounds_unit_and_spell_out_counts(site: Path,
                                                                      browser) -> None:
    tab = _open(browser, site / "d_points" / "ours" / f"{PLAIN}.html")
    rows = {}
    for tr in tab.locator("#validity tr[data-rule]").all():
        rows[tr.get_attribute("data-rule")] = (
            tr.locator("td[data-col=observed]").inner_text(),
            tr.locator("td[data-col=bound]").inner_text())
    tab.close()
    assert rows["prompt lengths"] == ("0 requests with a prompt length other than built", "none")
    assert rows["usage reported"] == ("0 replies without usage", "none")
    assert rows["bounded outputs"] == ("0 replies over max_tokens", "none")
    assert rows["any request succeeded"] == ("12 requests succeeded", "at least 1")
    assert rows["host steal"] == ("0.07% of CPU time", "<= 5% of CPU time")
    assert rows["client queue delay"] == ("0.6689 ms", "<= 10 ms")
    assert rows["client stamp error"] == ("1.2 ms", "<= 1 ms")
    assert not any(o == b for o, b in rows.values()), rows  # no "0 0"


def test_host_series_have_readable_labels_with_units(site: Path, browser) -> None:
    tab = _open(browser, site / "d_points" / "ours" / f"{PLAIN}.html")
    charts = tab.evaluate("""() => [...document.querySelectorAll('#series > div')].map(d => ({
        title: d.layout.title.text, unit: d.layout.yaxis.title.text,
        names: d.data.map(t => t.name)}))""")
    tab.close()
    by_title = {c["title"]: c for c in charts}
    cpu, steal = by_title["Host CPU"], by_title["Host steal"]
    assert cpu["unit"] == "cores (1 = one core busy)"
    assert sorted(cpu["names"]) == ["everything else (cores)", "harness + engine (cores)",
                                    "kernel threads (cores)", "other processes (cores)"]
    assert steal["names"] == ["hypervisor steal (share of CPU time)"]
    assert "Other series" not in by_title, charts  # no raw keys under "value"
    names = [n for c in charts for n in c["names"]]
    assert not any("_" in n for n in names), names


def test_histogram_count_axes_tick_at_whole_requests(site: Path, browser) -> None:
    tab = _open(browser, site / "d_points" / "ours" / f"{PLAIN}.html")
    ticks = tab.evaluate("""() => [...document.querySelectorAll('#dists > div')].map(d =>
        [...d.querySelectorAll('.yaxislayer-above .ytick text')].map(t => t.textContent))""")
    tab.close()
    assert len(ticks) == 4 and all(ticks), ticks
    for axis in ticks:  # whole numbers, each once: no 0.5, 1.5 or a repeated "1"
        assert all(re.fullmatch(r"\d+", t) for t in axis), ticks
        assert len(set(axis)) == len(axis), ticks
