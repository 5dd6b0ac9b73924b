"""The pages as a person reads them, in real headless Chromium: axis names and chart titles
that follow the axes chosen, no empty headings or lines, no chart of zeros, caveats where a
figure is a placeholder, every validity rule with passing ones worded as passes, names for
keys, a trend only where there are two dates, the speedup against AL drawn, and the CLI's
PNG in the page's colours. Pure-text checks (capacity title, the sweep's footer) at the end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.publish import spec_report
from harness.publish.dashboards.capacity import capacity_figures
from harness.publish.dashboards.figure import build_figure
from harness.publish.dashboards.page import load_points, write_dashboard
from harness.publish.report import summary_table
from harness.record.results import RunDir
from tests.publish.dashboard_fixtures import base_point, build, records

SCRIPTED = Path("results/baselines/scripted/points.jsonl")
SERIES = "smollm2-135m q4_1 · cpu · llamacpp"
PAGE_READY = "document.getElementById('summary').children.length > 0"


def _rules() -> list[dict]:
    """The rules a real sweep recorded, all passing (their messages worded for
    failure, as the recorder writes them)."""
    return json.loads(SCRIPTED.read_text().splitlines()[0])["validity"]


def _zero_counters() -> pd.DataFrame:
    """A plain point's series: requests running, and counters the engine exports but never
    moved here (drafts, accepted drafts) with a KV usage of 0 throughout."""
    rows = []
    for t in np.arange(-2.0, 9.0, 1.0):
        for name, v in (("num_requests_running", 2.0 + t % 2), ("kv_usage", 0.0),
                        ("spec_drafts_total", 50.0), ("spec_accepted_total", 80.0)):
            rows.append({"t_s": float(t), "source": "server", "device": "", "name": name,
                         "value": v})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("reading")
    info = build(root)
    run = RunDir.open(root, "read")
    rng = np.random.default_rng(3)
    rules = _rules()
    for day, scale in (("2026-11-01", 0.8), ("2026-11-30", 1.0)):
        for conc in (1, 2, 4, 8):
            pid = f"p{conc}-{day[-2:]}"
            if pid == "p8-30":  # one rule failed: the point is invalid, not failed
                rules = [{**r, "ok": False, "observed": 0.2} if r["name"] == "failed_share"
                         else r for r in _rules()]
            slo = ({"slo_ttft_ms": 200.0, "slo_tpot_ms": 50.0, "goodput": 1.5,
                    "goodput_share": 0.75} if pid == "p4-30" else {})
            p = base_point(pid, "fixed", conc, scale * 300.0 * conc ** 0.7,
                           60.0 / conc ** 0.3, started_at=f"{day}T07:00:00", validity=rules,
                           run_id="read", schema_version=2,
                           j_per_tok=0.42, tok_s_per_mw=2.4e6, measured_j_per_tok=None,
                           power_valid=None, **slo)  # a CPU host: no power telemetry
            run.write_requests(pid, records(14, rng, False))
            run.append_point(p)
    (run.root / "series").mkdir()
    _zero_counters().to_parquet(run.root / "series" / "p2-30.parquet")
    for conc in (1, 2, 4, 8):
        for al in (1.5, 2.5, 3.5):
            run.append_point(base_point(
                f"s{conc}-{al}", "fixed", conc, 300.0 * conc ** 0.7 * (0.6 + al / 5),
                60.0 / conc ** 0.3 * (0.5 + al / 4) / (1 + conc / 20),
                started_at="2026-11-30T07:00:00", run_id="read", spec_method="draft_model",
                spec_k=3,
                spec_acceptance_mode="injected", spec_acceptance_length=al,
                spec_realised_al=al * 0.98))
    info["runs"].append(root / "read")
    info["out"] = write_dashboard(info["runs"], root / "dash.html", "reading test")
    return info


@pytest.fixture(scope="module")
def tab(browser):
    pg = browser.new_page(viewport={"width": 1300, "height": 1000})
    pg.errors = []
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    pg.close()


def _open(tab, url: str, ready: str) -> None:
    tab.errors.clear()
    tab.goto(url)
    tab.wait_for_function(ready)
    assert tab.errors == [], (url, tab.errors)


def _dash(site, hash_: str, ready: str = "document.getElementById('chart').data") -> str:
    return f"{site['out'].as_uri()}#{hash_}"


CHART_READY = "document.getElementById('chart').data !== undefined"


def test_axis_names_and_the_title_follow_the_axes(site, tab) -> None:
    _open(tab, _dash(site, "scenario=fixed-1k1k"), CHART_READY)
    layout = tab.evaluate("document.getElementById('chart').layout")
    assert layout["xaxis"]["title"]["text"] == "Interactivity, 1 / median TPOT (tok/s/user)"
    assert layout["title"]["text"].startswith("Throughput per GPU, total vs Interactivity")
    _open(tab, _dash(site, "scenario=fixed-1k1k&y=cost_per_mtok_neocloud"), CHART_READY)
    title = tab.evaluate("document.getElementById('chart').layout.title.text")
    assert title.startswith("$ per million tokens (neocloud) vs Interactivity, 1 / median TPOT")
    assert "throughput" not in title.lower()


def test_sources_line_only_with_published_rows_and_cpu_prices_carry_a_caveat(site, tab):
    _open(tab, _dash(site, "scenario=fixed-1k1k"), CHART_READY)
    assert tab.is_visible("#sources-box") and tab.locator("#sources a").count() >= 1
    _open(tab, _dash(site, "scenario=fixed-1k1k&off=chip:b200"), CHART_READY)
    assert not tab.is_visible("#sources-box")
    assert "Sources" not in tab.inner_text("#view-frontier")
    # the host's chip is a placeholder price and power, and the page says so
    assert "illustrative" in tab.text_content("#price-note")
    assert "not a measurement" in tab.text_content("#telemetry-note")


def _point(site, pid: str) -> str:
    return (site["out"].parent / "dash_points" / "read" / f"{pid}.html").as_uri()


def test_point_page_lists_every_rule_and_passes_read_as_passes(site, tab) -> None:
    _open(tab, _point(site, "p2-30"), PAGE_READY)
    rules = _rules()
    assert tab.is_visible("#validity-title")
    rows = tab.locator("#validity tr[data-rule]")
    n = len(rules)
    assert rows.count() == n >= 10
    assert tab.text_content("#validity-count") == f"{n} of {n} rules pass"
    results = tab.locator("#validity td[data-col=result]").all_text_contents()
    assert results == ["pass"] * n
    # the recorder's sentences are worded for failure; a passing rule never shows them
    assert tab.locator("#validity td[data-col=detail]").all_text_contents() == [""] * n
    shown = " ".join(tab.locator("#validity td").all_text_contents()).lower().split()
    assert "true" not in shown and "false" not in shown
    assert "requests failed" not in tab.inner_text("body")


def test_a_failing_rule_says_why_and_the_fix(site, tab) -> None:
    _open(tab, _point(site, "p8-30"), PAGE_READY)
    row = tab.locator('#validity tr[data-rule="failed share"]')
    assert row.locator("td[data-col=result]").text_content() == "FAIL"
    detail = row.locator("td[data-col=detail]").text_content()
    assert "requests failed" in detail and "fix: " in detail
    n = len(_rules())
    assert tab.text_content("#validity-count") == f"{n - 1} of {n} rules pass"


def test_point_page_names_keys_and_says_where_energy_comes_from(site, tab) -> None:
    _open(tab, _point(site, "p2-30"), PAGE_READY)
    heads = tab.locator("#summary th").all_text_contents()
    assert heads and not any("_" in h for h in heads), heads  # spec_k, slo_ttft_ms, ...
    assert "Speculator k (draft tokens per step)" not in heads  # a plain point drafts nothing
    energy = tab.locator("#summary tr", has_text="Joules per token").inner_text()
    assert "not measured" in energy and "50 W in the chip table" in energy
    assert "illustrative" in tab.locator("#summary tr", has_text="prices").inner_text()


def test_slo_bounds_are_named_not_keyed(site, tab) -> None:
    _open(tab, _point(site, "p4-30"), PAGE_READY)
    heads = tab.locator("#summary th").all_text_contents()
    assert "SLO bound, TTFT (ms)" in heads and "SLO bound, TPOT (ms)" in heads
    assert not any("_" in h for h in heads), heads
    note = tab.text_content("#slo-note")
    assert "TTFT <= 200 ms" in note and "TPOT <= 50 ms" in note and "ttft" not in note


def test_point_page_charts_read_cleanly(site, tab) -> None:
    _open(tab, _point(site, "p2-30"), PAGE_READY)
    # CDF ticks at quartiles, not at the count axis' grid (0.211, 0.422, ...)
    ticks = tab.evaluate("document.getElementById('dist-ttft').layout.yaxis2.tickvals")
    assert ticks == [0, 0.25, 0.5, 0.75, 1]
    # the toolbar never covers a histogram's title
    for k in ("ttft", "tpot", "itl", "e2el"):
        tab.hover(f"#dist-{k} .nsewdrag")
        overlap = tab.evaluate(f"""() => {{
            const d = document.getElementById('dist-{k}');
            const a = d.querySelector('.gtitle').getBoundingClientRect();
            const b = d.querySelector('.modebar').getBoundingClientRect();
            return !(a.right <= b.left || b.right <= a.left || a.bottom <= b.top
                     || b.bottom <= a.top);
        }}""")
        assert not overlap, k
    # counters this plain point never moved and a KV usage of 0: not drawn as charts
    names = tab.evaluate("""Array.from(document.querySelectorAll('#series > div'))
        .flatMap(d => d.data.map(t => t.name))""")
    flat = tab.evaluate("""Array.from(document.querySelectorAll('#series > div'))
        .flatMap(d => d.data).filter(t => t.y.every(v => v === 0 || v === null)).length""")
    assert names and flat == 0
    assert not any("draft" in n or "AL per interval" in n or "KV" in n for n in names), names
    assert "zero throughout, not drawn" in tab.text_content("#series-note")
    # a fixed point's one row of requests: no timeline heading with nothing under it
    assert not tab.is_visible("#timeline-title") and not tab.is_visible("#timeline")
    assert tab.locator("h2:visible", has_text="Request timeline").count() == 0


def test_trend_over_two_dates_draws_a_line(site, tab) -> None:
    _open(tab, _dash(site, f"view=trend&scenario=fixed-1k1k&trend_target=40&recipe={SERIES}"),
          "document.getElementById('trend-count').textContent.length > 0")
    traces = tab.evaluate("document.getElementById('trend').data")
    assert tab.is_visible("#trend")
    [t] = traces
    assert t["x"] == ["2026-11-01", "2026-11-30"] and t["y"][0] < t["y"][1]
    title = tab.evaluate("document.getElementById('trend').layout.title.text")
    assert "median_intvty" not in title and "Interactivity, 1 / median TPOT = 40" in title


def test_speculation_view_draws_speedup_against_al_and_reads(site, tab) -> None:
    _open(tab, _dash(site, "view=speculation&scenario=fixed-1k1k"),
          "document.getElementById('spec-al-chart').data !== undefined")
    traces = tab.evaluate("document.getElementById('spec-al-chart').data")
    assert len(traces) == 4  # one per load: draft_model k=3 at 1, 2, 4, 8
    for t in traces:
        assert t["x"] == [1.5, 2.5, 3.5] and all(isinstance(y, float) for y in t["y"])
        assert t["y"] == sorted(t["y"])  # the fixture's speedup grows with AL
    # both load axes on this page and the capacity chart are logarithmic
    assert tab.evaluate("document.getElementById('spec-chart').layout.xaxis.type") == "log"
    heads = tab.locator(".spec-table th").all_text_contents()
    assert heads and not any("_" in h for h in heads)
    why = tab.locator('.spec-table td[data-col="why"]')
    if why.count():
        assert why.first.bounding_box()["width"] >= 200


def test_compare_view_reads_as_harness_speculation_for_the_same_target(site, tab) -> None:
    points = load_points([site["root"] / "read"])
    # inside the plain frontier (intvty 30..60) and outside it
    tables = spec_report.build(points, targets=[40.0, 500.0])
    cli = {r["target_intvty"]: spec_report._cell(r, "plain_tput")
           for r in tables["equal_interactivity"]}
    _open(tab, _dash(site, "view=compare&scenario=fixed-1k1k&targets=40,500&off=chip:b200"
                           "&dates=range"),
          "document.querySelectorAll('#compare-table tr').length > 1")
    cells = dict(tab.evaluate(f"""() => [...document.querySelectorAll(
        '#compare-table tr[data-series="{SERIES}"]')].map(tr => [Number(tr.dataset.target),
        tr.querySelector('td[data-metric=tput_per_gpu]').textContent])"""))
    # both read every date of the range (the compare view's default is each series' latest
    # date, where this series' conc-8 point is invalid: a different frontier, another number)
    assert cli[40.0] not in ("", "–") and cells[40.0] == cli[40.0]
    assert cli[500.0] == "–" and cells[500.0].startswith("– (outside the frontier")


def test_cli_png_series_colours_match_the_page(site, tab) -> None:
    _open(tab, _dash(site, "scenario=fixed-1k1k"), CHART_READY)
    page = dict(tab.evaluate("""document.getElementById('chart').data
        .filter(t => t.mode === 'markers').map(t => [t.name, t.marker.color])"""))
    fig = build_figure(load_points(site["runs"]), "fixed-1k1k", "median_intvty",
                       "tput_per_gpu")
    cli = {t.name: t.marker.color for t in fig.data if t.mode == "markers"}
    assert cli and cli == page
    assert any(n.endswith("· published") for n in cli)  # the pair that used to swap
    assert fig.layout.title.text.startswith("Throughput per GPU, total vs Interactivity, 1 /")


def test_capacity_title_never_prints_none(tmp_path) -> None:
    run = tmp_path / "run"
    points = [{"_root": str(run), "point_id": f"c{c}", "valid": True, "p99_ttft": 0.9}
              for c in (1, 2, 4)]
    search = {"run_dir": str(run), "job": "job0", "axis": "concurrency",
              "criteria": {"p99_ttft_ms": 500}, "highest_passing": None, "lowest_failing": 1,
              "breaching_metric": "p99_ttft_ms", "num_points": 3,
              "points": [{"load": c, "point_id": f"c{c}"} for c in (1, 2, 4)]}
    [fig] = capacity_figures([search], points)
    title = fig["layout"]["title"]["text"]
    assert "None" not in title and "no load passed" in title and "p99_ttft" not in title
    assert "TTFT, p99" in title and fig["layout"]["yaxis"]["title"]["text"] == "TTFT, p99 (ms)"
    assert fig["layout"]["xaxis"]["type"] == "log"


def test_sweep_footer_names_rate_points_by_their_rate() -> None:
    p = {**base_point("r", "fixed", 0, 10.0, 5.0), "rate": 2.5, "valid": False,
         "invalid_reasons": ["send lag p99 40 ms > 20 ms"]}
    text = summary_table([p])
    assert "rate 2.5 req/s: send lag" in text and "conc 0" not in text
