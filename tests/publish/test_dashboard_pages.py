"""Point pages and comparison views in real headless Chromium (one browser for the module):
every page renders without console errors or network requests; the pages show the run files'
numbers of requests, lanes and traces; a URL's hash opens its view; the comparison table's
values equal an independent recomputation; screenshots are kept under the test's tmp dir."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.publish.dashboards.page import write_dashboard
from harness.record.point_load import load_flat
from tests.publish.dashboard_fixtures import EVIL, build
from tests.publish.test_comparison import independent_at

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    info = build(root)
    info["out"] = write_dashboard(info["runs"], root / "dash.html", "pages test")
    info["shots"] = root / "screenshots"
    info["shots"].mkdir()
    return info


@pytest.fixture(scope="module")
def tab(browser):
    pg = browser.new_page(viewport={"width": 1300, "height": 1000})
    pg.errors, pg.remote = [], []
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:"))
          else pg.remote.append(r.url))
    yield pg
    pg.close()


def _open(tab, url: str, ready: str) -> None:
    tab.errors.clear()
    tab.remote.clear()
    tab.goto(url)
    tab.wait_for_function(ready)
    assert tab.errors == [] and tab.remote == [], (url, tab.errors, tab.remote)
    assert tab.evaluate("window.__pwned") is None


def _point_page(site, pid: str) -> Path:
    return site["out"].parent / "dash_points" / "ours" / f"{pid}.html"


SERIES_NAMES = """Array.from(document.querySelectorAll('#series > div'))
    .flatMap(d => d.data.map(t => t.name))"""
PAGE_READY = "document.getElementById('summary').children.length > 0"
CELLS = """() => [...document.querySelectorAll('#compare-table td[data-metric]')]
    .map(td => [td.parentElement.dataset.series, Number(td.parentElement.dataset.target),
                td.dataset.metric, Number(td.dataset.value)])"""


def test_every_page_renders_offline(site, tab) -> None:
    pages = sorted((site["out"].parent / "dash_points").rglob("*.html"))
    assert len(pages) == len(load_flat(site["runs"]))  # one page per point
    for page in pages:
        _open(tab, page.as_uri(), PAGE_READY)
    # the main page's three views open in the tests below, each from a link
    _open(tab, f"{site['out'].as_uri()}#view=frontier&scenario=fixed-1k1k",
          "document.getElementById('count').textContent.length > 0")
    tab.screenshot(path=str(site["shots"] / "main-frontier.png"))


def test_markers_link_their_point_pages(site, tab) -> None:
    _open(tab, site["out"].as_uri() + "#scenario=agentic-weka-cpu",
          "document.getElementById('chart').data !== undefined")
    links = tab.evaluate("""() => document.getElementById('chart').data
        .filter(t => t.mode === 'markers').flatMap(t => t.customdata)""")
    assert len(links) == 4 and all((site["out"].parent / u).exists() for u in links)
    point = tab.locator(".scatterlayer .trace .points path").first
    box = point.bounding_box()
    with tab.expect_navigation():
        tab.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert "/dash_points/ours/a" in tab.url


def test_fixed_point_page_shows_the_run_files(site, tab) -> None:
    root = site["root"] / "ours"
    req = pd.read_parquet(root / "requests" / "c2-fixed.parquet")
    _open(tab, _point_page(site, "c2-fixed").as_uri(), PAGE_READY)
    measured = int((req.phase == "measured").sum())
    assert tab.text_content("#request-count td") == f"{len(req)} ({measured}, {measured})"
    n = tab.evaluate("document.getElementById('dist-ttft').data[1].x.length")
    assert n == measured  # the CDF has a step per measured request
    # no series file: the server's samples, counters as rates, one trace per metric
    traces = tab.evaluate(SERIES_NAMES)
    assert len(traces) == len(site["server_names"])
    assert "vllm:prompt_tokens_total /s" in traces
    assert tab.locator("#identity li", has_text="<img").count() >= 1  # shown as text
    # the table names figures as people read them, with units, never raw keys
    assert tab.locator("#summary th", has_text="Joules per token (measured) (J/tok)").count() == 1
    assert tab.locator("#summary th", has_text="Throughput per GPU, total (tok/s/GPU)").count() == 1
    assert tab.locator("#summary td", has_text="None").count() == 0
    tab.screenshot(path=str(site["shots"] / "point-fixed.png"), full_page=True)


def test_agentic_point_page_has_a_row_per_lane_and_agent(site, tab) -> None:
    root = site["root"] / "ours"
    req = pd.read_parquet(root / "requests" / "a2.parquet")
    tags = [json.loads(t) for t in req.tags]
    rows = {f"lane {t['lane']} · {t['agent'] or 'main'}" for t in tags}
    _open(tab, _point_page(site, "a2").as_uri(), PAGE_READY)
    shown = tab.evaluate("document.getElementById('timeline').layout.yaxis.ticktext")
    assert set(shown) == rows and len(shown) == 4
    decoding = tab.evaluate("""document.getElementById('timeline').data
        .find(t => t.name === 'decoding').x.length""")
    assert decoding == 3 * len(req)  # start, end, gap per request
    waits = tab.evaluate("""document.getElementById('timeline').data
        .find(t => t.name.startsWith('wait')).x.length""")
    assert waits > 0  # the gaps between a row's requests are drawn
    # one chart per quantity family, each with its unit; counters as rates, and the
    # acceptance the speculative counters imply per interval
    names = tab.evaluate(SERIES_NAMES)
    assert len(names) == len(site["series"].groupby(["source", "device", "name"])) + 1
    units = tab.evaluate("""Array.from(document.querySelectorAll('#series > div'))
        .map(d => d.layout.yaxis.title.text)""")
    assert "tokens/s" in units and "W" in units and "requests" in units
    assert len(units) == len(set(units))
    assert not any(n.endswith("_total") for n in names)
    assert tab.evaluate("document.getElementById('timeline').layout.shapes[0].x1") == 0
    # siblings: the same series at its other load levels, in order
    sib = tab.locator("#siblings a").all_text_contents()
    assert sib[0] == "< previous" and sib[-1] == "next >"
    assert tab.locator("#timeline", has_text="<img").count() == 1  # an agent's name as text
    tab.screenshot(path=str(site["shots"] / "point-agentic.png"), full_page=True)


def test_hash_opens_its_view_and_the_table_matches_recomputation(site, tab) -> None:
    url = (f"{site['out'].as_uri()}#view=compare&scenario=fixed-1k1k&targets=30,60,500"
           "&tier=neocloud&off=engine:llamacpp")
    _open(tab, url, "document.querySelectorAll('#compare-table tr').length > 1")
    assert tab.input_value("#view") == "compare" and tab.input_value("#tier") == "neocloud"
    assert tab.is_visible("#compare-table") and not tab.is_visible("#chart")
    assert not tab.is_checked("#f-engine-llamacpp")
    cells = tab.evaluate(CELLS)
    points = [p for p in load_flat([site["root"] / "ix"]) if p["scenario"] == "fixed-1k1k"]
    assert cells and len({c[0] for c in cells}) >= 4
    for series, target, key, value in cells:
        want = independent_at(points, series, target,
                              "tput_per_gpu" if key == "tput_per_gpu" else "cost_per_mtok_neocloud",
                              latest_date=True)
        assert value == pytest.approx(want, rel=1e-9), (series, target, key)
    # every date of the range on one frontier, when the link says so
    _open(tab, url + "&dates=range", "document.querySelectorAll('#compare-table tr').length > 1")
    for series, target, key, value in tab.evaluate(CELLS):
        if key == "tput_per_gpu":
            assert value == pytest.approx(independent_at(points, series, target, key), rel=1e-9)
    tab.screenshot(path=str(site["shots"] / "compare.png"), full_page=True)


def test_trend_view_from_a_link(site, tab) -> None:
    # every series here reaches target 45 on one date only: no chart of single dots, the
    # page says so and names each series' one value (a trend over two dates:
    # tests/publish/test_page_reading.py)
    _open(tab, f"{site['out'].as_uri()}#view=trend&scenario=fixed-1k1k&trend_target=45"
          "&trend_by=date", "document.getElementById('trend-count').textContent.length > 0")
    assert tab.input_value("#trend-target") == "45"
    note = tab.text_content("#trend-count")
    assert note.startswith("No trend to draw") and "on one date only" in note
    assert not tab.is_visible("#trend")


def test_invalid_points_never_shape_a_frontier(site, tab) -> None:
    _open(tab, f"{site['out'].as_uri()}#scenario=agentic-weka-cpu&optimal=1",
          "document.getElementById('chart').data !== undefined")
    xs = tab.evaluate("""document.getElementById('chart').data
        .filter(t => t.mode === 'markers').flatMap(t => t.x)""")
    assert xs and 30.0 not in xs  # the invalid point's x (its y dominates everything)
    tab.uncheck("#optimal")
    symbols = tab.evaluate("""document.getElementById('chart').data
        .filter(t => t.mode === 'markers').flatMap(t => t.marker.symbol)""")
    assert "x" in symbols  # still shown, marked
    assert EVIL not in tab.content().split("<body>")[1].split("<script")[0]


def test_js_canonical_agentic_frontier_matches_python(site, tab) -> None:
    import numpy as np

    from harness.publish.curves import canonical_agentic_ids

    if "dash.html" not in tab.url:  # the page the test before left open will do
        _open(tab, site["out"].as_uri(), "document.getElementById('chart').data !== undefined")
    rng = np.random.default_rng(11)
    for _ in range(5):
        pts = [{"point_id": str(i), "series": f"s{i % 2}", "precision": "fp8",
                "date": f"2026-01-0{1 + i % 3}", "valid": bool(rng.random() > 0.2),
                "p90_e2e_intvty": float(rng.uniform(0, 50)),
                "tput_per_gpu": float(rng.uniform(0, 50))} for i in range(40)]
        js = tab.evaluate("""([pts]) => [...canonicalIds(pts, 'tput_per_gpu', true,
                             'p90_e2e_intvty')]""", [pts])
        assert set(js) == canonical_agentic_ids(pts, "tput_per_gpu")
