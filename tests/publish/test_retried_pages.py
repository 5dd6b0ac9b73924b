"""What a reader sees where the issue-40 audit could not look for want of data, re-tried on
run directories like the ones the harness writes: open-loop rate points named by their rate
(never "concurrency 0"), an SLO search that found no passing load, a rule kept by its `warn`
setting, a step cost whose plain point is invalid, load axes ticked at the loads measured, a
frontier legend whose marker is not the invalid point's x, clamped compare bars marked as
such, a trend with a series on one date only. Built through `harness dashboard` (the CLI
path) and read in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.publish.dashboards.capacity import capacity_figures, read_searches
from harness.publish.dashboards.validity_rows import validity_rows
from harness.record.results import RunDir
from tests.publish.dashboard_fixtures import base_point, records

pytestmark = pytest.mark.slow
SCRIPTED = Path("results/baselines/scripted/points.jsonl")
PLAIN = "smollm2-135m q4_1 · cpu · llamacpp"
SCEN = "fixed-1k1k"
PAGE_READY = "document.getElementById('summary').children.length > 0"


def _rules(kept_sample: int | None = None, stamp_failed: bool = False) -> list[dict]:
    """The rules a real sweep recorded, all passing (but the client's stamp error where
    `stamp_failed`), and the sample-size rule as the recorder writes it
    (harness/record/bench_rules.py): with `kept_sample` completed requests, below its floor
    and kept by `validity.sample=warn`."""
    rules = json.loads(SCRIPTED.read_text().splitlines()[0])["validity"]
    for r in rules:
        if stamp_failed and r["name"] == "client_stamp_error":
            r.update(ok=False, observed=1.5)
    n = kept_sample or 20
    rules.append({"name": "sample_size", "ok": True, "observed": n,
                  "bound": ">= 10 completed requests", "fatal": False,
                  "message": f"{n} completed requests: the percentiles of a point of concurrent "
                             "requests need >= 10" + (" (kept: validity.sample=warn)"
                                                       if kept_sample else ""),
                  "remedy": "raise scenario.requests_per_conc (fixed)"})
    return rules


def _counters(conc: int) -> dict:
    """An n-gram point's engine counters: 1000 tokens, 400 accepted of 500 drafted in 150
    drafts (600 steps)."""
    return {"spec_drafts": 150, "spec_draft_tokens": 500, "spec_accepted_tokens": 400,
            "server_generation_tokens": 1000, "spec_acceptance_mode": "real",
            "spec_realised_al": 3.67, "median_tpot": 0.02 * conc ** 0.3}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("retried")
    run = RunDir.open(root, "ours")
    rng = np.random.default_rng(11)
    pts = []
    for day, scale in (("2026-11-01", 0.8), ("2026-11-30", 1.0)):
        for conc in (1, 2, 4, 8):
            # the lowest load is invalid: the series' first point is an x, and the n-gram
            # point at that load has no valid plain point to price its steps against
            bad = conc == 1
            pts.append(base_point(
                f"c{conc}-{day[-2:]}", "fixed", conc, scale * 300.0 * conc ** 0.7,
                60.0 / conc ** 0.3, started_at=f"{day}T07:00:00", median_tpot=0.02 * conc ** 0.3,
                valid=not bad, invalid_reasons=["client stamp error p99 1.5 ms > 1 ms"] if bad
                else [], validity=_rules(6 if conc == 2 else None, bad),
                schema_version=2))
    for conc in (1, 2, 4):
        pts.append(base_point(f"n{conc}", "fixed", conc, 420.0 * conc ** 0.7, 70.0 / conc ** 0.3,
                              started_at="2026-11-30T07:00:00", spec_method="ngram", spec_k=4,
                              **_counters(conc)))
    for rate in (2.0, 4.0):  # open loop: conc is the in-flight cap, 0 for none
        pts.append(base_point(f"q{rate:g}", "fixed", 0, 100.0 * rate, 50.0, rate=rate,
                              arrival="poisson", started_at="2026-11-30T07:00:00",
                              valid=rate < 3, invalid_reasons=[] if rate < 3 else
                              ["requests were sent 7.5 ms late at p99"]))
    pts.append(base_point("a2", "agentic", 2, 350.0, 24.0, started_at="2026-11-30T07:00:00"))
    for p in pts:
        run.write_requests(p["point_id"], records(14, rng, p["scenario_kind"] == "agentic"))
        run.append_point(p)
    run.write_json("search/job0.json", {
        "axis": "concurrency", "criteria": {"p99_ttft_ms": 1.0}, "highest_passing": None,
        "lowest_failing": 1, "breaching_metric": "p99_ttft_ms", "num_points": 1,
        "points": [{"load": 1, "point_id": "c1-01"}]})
    assert main(["dashboard", str(run.root), "--out", str(root / "d.html")]) == 0
    return {"root": root, "run": run.root, "points": pts}


@pytest.fixture(scope="module")
def tab(browser):
    pg = browser.new_page(viewport={"width": 1300, "height": 1000})
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    pg.close()


def _open(tab, url: str, ready: str) -> None:
    tab.errors.clear()
    tab.goto(url)
    tab.wait_for_function(ready)
    tab.wait_for_timeout(200)
    assert tab.errors == [], (url, tab.errors)


def _dash(site, hash_: str) -> str:
    return f"{(site['root'] / 'd.html').as_uri()}#{hash_}"


def _page(site, name: str) -> str:
    return (site["root"] / "d_points" / "ours" / name).as_uri()


def test_rate_points_are_named_by_their_rate_never_concurrency_0(site, tab) -> None:
    _open(tab, _page(site, "q2.html"), PAGE_READY)
    assert tab.inner_text("h1").endswith(f"{SCEN} · rate 2 req/s (poisson)")
    body = tab.inner_text("body")
    assert "concurrency 0" not in body and "c0 " not in body
    cap = tab.locator("#summary tr", has_text="In-flight cap").inner_text()
    assert cap.split("\t")[-1].strip() == "none"
    links = tab.locator("#siblings a").all_text_contents()
    assert any(a.startswith("4 req/s") for a in links), links
    _open(tab, _dash(site, f"scenario={SCEN}"), "document.getElementById('chart').data")
    hovers = tab.evaluate("""document.getElementById('chart').data.flatMap(t => t.text || [])
        .filter(s => s.includes('open loop'))""")
    assert hovers and all("rate 2 req/s (poisson)" in h or "rate 4 req/s (poisson)" in h
                          for h in hovers)
    assert not any("concurrency 0" in h for h in hovers)


def test_an_slo_search_with_no_passing_load_reads_so(site, tab) -> None:
    _open(tab, _dash(site, f"scenario={SCEN}"), "document.querySelector('#capacity .main-svg')")
    [title] = tab.evaluate("""Array.from(document.querySelectorAll('#capacity .js-plotly-plot'))
        .map(g => g.layout.title.text)""")
    assert "None" not in title and "no load passed" in title, title
    assert "TTFT, p99 <= 1 ms" in title and "(ms) <=" not in title  # one unit, once
    assert title.startswith("ours · job0: ") and title.endswith("· 1 point")
    [fig] = capacity_figures(read_searches([site["run"]]), [
        {**p, "_root": str(site["run"])} for p in site["points"]])
    assert fig["layout"]["xaxis"]["tickvals"] == [1]


def test_a_rule_kept_by_warn_reads_as_a_warning_not_a_pass(site, tab) -> None:
    _open(tab, _page(site, "c2-30.html"), PAGE_READY)
    row = tab.locator('#validity tr[data-rule="sample size"]')
    assert row.locator("td[data-col=result]").text_content() == "warning (kept)"
    assert "kept: validity.sample=warn" in row.locator("td[data-col=detail]").text_content()
    n = len(_rules())
    assert tab.text_content("#validity-count") == \
        f"{n - 1} of {n} rules pass, 1 kept with a warning"


def test_a_bound_s_source_is_not_read_as_the_observed_unit() -> None:
    [row] = validity_rows({"validity": [{
        "name": "eval_capitals", "ok": True, "observed": 0.75,
        "bound": ">= 0.6 (default (docs/evals.md: set from SmolLM2-135M's runs))"}]})
    assert row["observed"] == "0.75" and row["bound"].startswith(">= 0.6 (default")


def test_speculation_view_reads_why_and_ticks_the_loads_measured(site, tab) -> None:
    _open(tab, _dash(site, f"view=speculation&scenario={SCEN}"),
          "document.getElementById('spec-chart').data !== undefined")
    x = tab.evaluate("document.getElementById('spec-chart').layout.xaxis")
    assert x["type"] == "log" and x["tickvals"] == [2, 4]  # c1's plain point is invalid
    assert x["title"]["text"] == "concurrency (requests in flight)"
    assert tab.evaluate("document.getElementById('spec-chart').layout.showlegend") is True
    why = dict(zip(tab.locator('.spec-table[data-table="cost"] td[data-col="conc"]')
                   .all_text_contents(),
                   tab.locator('.spec-table[data-table="cost"] td[data-col="why"]')
                   .all_text_contents(), strict=True))
    assert why["1"].endswith("the plain point at this load is invalid (nothing to price a step "
                             "against)"), why
    assert "no plain point" not in " ".join(why.values())
    for col in ("why", "base"):  # neither squeezed to a word a line
        assert tab.locator(f'.spec-table td[data-col="{col}"]').first.bounding_box()["width"] > 200


def test_frontier_legend_marker_is_not_the_invalid_point_s_x(site, tab) -> None:
    _open(tab, _dash(site, f"scenario={SCEN}&from=2026-11-30"),
          "document.getElementById('chart').data")
    plain = tab.evaluate(f"""document.getElementById('chart').data
        .find(t => t.name === '{PLAIN}' && t.mode === 'markers')""")
    assert "x" in plain["marker"]["symbol"]  # the invalid point is drawn, as an x
    assert plain["marker"]["symbol"][0] == "circle"  # the legend shows the first marker
    assert tab.locator("#published-note").is_hidden()  # no published rows in view


def test_compare_bars_mark_clamped_values_and_no_empty_source_column(site, tab) -> None:
    # 48 inside both frontiers (plain 32.2-50, n-gram 46.2-70), 500 outside both
    _open(tab, _dash(site, f"view=compare&scenario={SCEN}&targets=48,500&dates=range"),
          "document.getElementById('compare-bars').data !== undefined")
    heads = tab.locator("#compare-table th").all_text_contents()
    assert "source" not in heads  # none of ours has a source to link
    bars = tab.evaluate("document.getElementById('compare-bars').data")
    for t in bars:
        # overlay: hatch lines over the bar's colour (the default replaces it: an invisible bar)
        assert t["marker"]["pattern"]["fillmode"] == "overlay"
        shapes = t["marker"]["pattern"]["shape"]
        clamped = t["name"].endswith("= 500")
        assert shapes == ["/"] * len(shapes) if clamped else set(shapes) == {""}, t["name"]
    assert "hatched" in tab.evaluate("document.getElementById('compare-bars').layout.title.text")


def test_trend_names_a_series_with_one_date(site, tab) -> None:
    _open(tab, _dash(site, f"view=trend&scenario={SCEN}&trend_target=48"),
          "document.getElementById('trend-count').textContent.length > 0")
    lines = {t["name"]: t["x"] for t in tab.evaluate("document.getElementById('trend').data")}
    assert lines[PLAIN] == ["2026-11-01", "2026-11-30"]
    assert lines[f"{PLAIN} · ngram"] == ["2026-11-30"]
    assert f"on one date only (a dot, no trend): {PLAIN} · ngram" in tab.text_content(
        "#trend-count")


def test_an_agentic_point_says_what_its_concurrency_counts(site, tab) -> None:
    _open(tab, _page(site, "a2.html"), PAGE_READY)
    assert tab.inner_text("h1").endswith("concurrency 2 (session trees)")
    heads = tab.locator("#summary th").all_text_contents()
    assert "Concurrency (session trees)" in heads and "Concurrency (requests in flight)" \
        not in heads


def test_export_warnings_name_a_rate_point_by_its_rate(site) -> None:
    from harness.publish.exports import invalid_warning
    from harness.record.point_record import PointRecord

    q4 = next(p for p in site["points"] if p["point_id"] == "q4")
    text = invalid_warning(PointRecord.from_flat(q4))
    assert f"({SCEN}, rate 4 req/s)" in text and "conc 0" not in text, text
