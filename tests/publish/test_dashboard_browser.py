"""The dashboard in real headless Chromium (Playwright on the system's chromium): no console
errors, no network, the expected traces, hover text, filters, axis choice, a screenshot."""

from __future__ import annotations

import json

import pytest

from harness.publish.curves import pareto_frontier
from harness.publish.dashboards.figure import build_figure, export_image
from harness.publish.dashboards.page import load_points, write_dashboard
from harness.publish.ingest import ingest
from harness.record.metrics import metric
from harness.record.results import RunDir

pytestmark = pytest.mark.slow
EVIL = '<img src=x onerror="window.__pwned=1">'


def _agentic_point(conc, spec, al, tput, intv):
    return {"point_id": f"a{conc}{spec}", "run_id": "ag", "model": "smollm2-135m",
            "precision": "q4_1", "chip": "cpu", "engine": "llamacpp", "engine_version": "x",
            "spec_method": spec, "spec_k": 4 if spec != "none" else 0,
            "spec_acceptance_mode": "injected" if spec != "none" else "none",
            "spec_acceptance_length": al, "spec_acceptance_source": "table calibrated.csv:3",
            "spec_realised_al": al and al * 0.99, "tp": 1, "ep": 1, "dp_attention": False,
            "pp": 1, "gpus": 1, "scenario": "agentic-weka-cpu", "scenario_kind": "agentic",
            "conc": conc, "valid": True, "status": "ok", "started_at": "2026-11-30T07:00:00",
            "tput_per_gpu": tput, "p90_e2e_intvty": intv, "median_intvty": intv * 3,
            "chip_power_kw_all_in": 0.05, "chip_cost_hyperscaler": 0.1,
            "chip_cost_neocloud": 0.08, "chip_cost_rental_3yr": 0.05, "fit": "scale/64",
            "qps": 1.0}


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("dash")
    ingest(__import__("pathlib").Path("scenarios/reference/dsr1_b200_rows.json"), root / "ix")
    run = RunDir.open(root, "ag")
    for p in (_agentic_point(1, "none", None, 200.0, 1.0),
              _agentic_point(2, "none", None, 350.0, 0.8),
              _agentic_point(1, "ngram", 2.6, 260.0, 1.3),
              {**_agentic_point(4, "ngram", 2.6, 400.0, 0.5), "model": EVIL}):
        run.append_point(p)
    out = root / "d.html"
    write_dashboard([root / "ix", root / "ag"], out, "test dashboard")
    return out, root


@pytest.fixture
def page(browser, page_file):
    pg = browser.new_page(viewport={"width": 1300, "height": 1000})
    pg.errors, pg.remote = [], []
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:"))
          else pg.remote.append(r.url))
    pg.goto(page_file[0].as_uri())
    pg.wait_for_function("document.getElementById('chart').data !== undefined")
    yield pg
    pg.close()


def _traces(pg):
    return pg.evaluate("""() => document.getElementById('chart').data.map(t => ({
        name: t.name, mode: t.mode, n: t.x.length, text: t.text || null}))""")


def test_opens_offline_without_errors_and_draws_series_per_speculator(page, tmp_path) -> None:
    assert page.errors == [] and page.remote == []
    # opens on the scenario with the most points: InferenceX's 8k/1k or 1k/1k
    assert page.input_value("#scenario").startswith("fixed-")
    names = {t["name"] for t in _traces(page) if t["mode"] == "markers"}
    assert any("· mtp" in n for n in names) and any("mtp" not in n for n in names)
    page.screenshot(path=str(tmp_path / "dash.png"), full_page=True)
    assert (tmp_path / "dash.png").stat().st_size > 20_000


def test_agentic_view_merges_speculators_with_method_in_the_tooltip(page) -> None:
    page.select_option("#scenario", "agentic-weka-cpu")
    assert page.input_value("#xaxis") == "p90_e2e_intvty"  # the agentic headline axis
    markers = [t for t in _traces(page) if t["mode"] == "markers"]
    main = [t for t in markers if t["name"] == "smollm2-135m q4_1 · cpu · llamacpp"]
    assert len(main) == 1 and main[0]["n"] == 3  # none and ngram points in one series
    texts = " ".join(main[0]["text"])
    assert "speculator ngram k=4" in texts and "AL requested 2.6" in texts
    assert "realised 2.574" in texts and "calibrated.csv" in texts


def test_agentic_curve_marks_speculative_points_and_says_so(page) -> None:
    """One curve, but a reader tells the n-gram points from the plain ones by the marker."""
    assert page.locator("#spec-marker-note").is_hidden()  # fixed view: no merged series
    page.select_option("#scenario", "agentic-weka-cpu")
    main = page.evaluate("""() => document.getElementById('chart').data.find(t =>
        t.mode === 'markers' && t.name === 'smollm2-135m q4_1 · cpu · llamacpp')""")
    marker = main["marker"]
    marks = list(zip(main["text"], marker["symbol"], marker["line"]["width"], strict=True))
    spec = {(sym, w) for text, sym, w in marks if "speculator ngram" in text}
    plain = {(sym, w) for text, sym, w in marks if "speculator" not in text}
    assert spec == {("triangle-up", 2)} and plain == {("circle", 0)}, marks
    # the drawn markers themselves differ: two shapes on the one trace
    paths = page.evaluate("""() => {
        const gd = document.getElementById('chart');
        const i = gd.data.findIndex(t => t.mode === 'markers'
                                         && t.name === 'smollm2-135m q4_1 · cpu · llamacpp');
        const layer = document.querySelectorAll('.scatterlayer .trace')[i];
        return [...layer.querySelectorAll('.points path')].map(p => p.getAttribute('d'));
    }""")
    assert len(set(paths)) == 2, paths
    note = page.locator("#spec-marker-note")
    assert note.is_visible() and "Outlined triangles are speculative points" in note.inner_text()
    assert "same curve" in note.inner_text()


def test_hover_shows_the_identity(page) -> None:
    page.select_option("#scenario", "agentic-weka-cpu")
    point = page.locator(".scatterlayer .trace .points path").first
    box = point.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(".hoverlayer .hovertext")
    hover = page.locator(".hoverlayer").text_content()
    assert "concurrency" in hover and "TP 1" in hover and "run ag" in hover


def test_filters_and_axes_change_the_view(page) -> None:
    before = sum(t["n"] for t in _traces(page) if t["mode"] == "markers")
    page.uncheck("#f-engine-trtllm")
    after = sum(t["n"] for t in _traces(page) if t["mode"] == "markers")
    assert 0 < after < before
    page.select_option("#yaxis", "cost_per_mtok_neocloud")
    title = page.evaluate("document.getElementById('chart').layout.yaxis.title.text")
    m = metric("cost_per_mtok_neocloud")  # the axis label is the catalogue's
    assert title == f"{m.label} ({m.unit})" == "$ per million tokens (neocloud) ($/Mtok)"
    page.check("#optimal")
    optimal = sum(t["n"] for t in _traces(page) if t["mode"] == "markers")
    assert optimal <= after


def test_text_from_configs_is_escaped(page) -> None:
    page.select_option("#scenario", "agentic-weka-cpu")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#filter-model label", has_text="<img").count() == 1  # shown as text


def test_js_frontier_matches_python(page, page_file) -> None:
    points = [p for p in load_points([page_file[1] / "ix"]) if p["scenario"] == "fixed-1k1k"]
    series = {}
    for p in points:
        series.setdefault((p["engine"], p["precision"], p["spec_method"]), []).append(p)
    for pts in series.values():
        xs = [p["median_intvty"] for p in pts]
        ys = [p["tput_per_gpu"] for p in pts]
        py = sorted((xs[i], ys[i]) for i in pareto_frontier(xs, ys))
        js = page.evaluate("""([pts]) => frontier(pts, 'x', 'y', true, true)
                              .map(p => [p.x, p.y])""",
                           [[{"x": x, "y": y, "valid": True}
                             for x, y in zip(xs, ys, strict=True)]])
        assert sorted(map(tuple, js)) == py
        # an invalid point never shapes a frontier, however good it looks
        best = {"x": max(xs) * 2, "y": max(ys) * 2, "valid": False}
        js = page.evaluate("""([pts]) => frontier(pts, 'x', 'y', true, true)
                              .map(p => [p.x, p.y])""",
                           [[{"x": x, "y": y, "valid": True}
                             for x, y in zip(xs, ys, strict=True)] + [best]])
        assert sorted(map(tuple, js)) == py


def test_png_and_svg_export_of_a_view(browser, page_file, tmp_path) -> None:
    fig = build_figure(load_points([page_file[1] / "ix"]), "fixed-8k1k", "median_intvty",
                       "tok_s_per_mw", optimal_only=True, title="t")
    png = export_image(fig, tmp_path / "v.png")
    svg = export_image(fig, tmp_path / "v.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "<svg" in svg.read_text()[:500]
    data = json.loads(fig.to_json())["data"]
    assert any(t.get("mode") == "lines" for t in data)  # frontier curves drawn


def test_speculation_view_draws_ratios_and_tables(page) -> None:
    """The published rows' MTP series against their plain match: one ratio curve per series,
    the break-even line, and the tables, on the scenario the page opens on."""
    page.select_option("#view", "speculation")
    page.wait_for_function("document.getElementById('spec-chart').data !== undefined")
    traces = page.evaluate("() => document.getElementById('spec-chart').data.map(t => t.name)")
    assert traces and all("mtp (published)" in t for t in traces)
    tables = page.evaluate("""() => [...document.querySelectorAll('.spec-table')]
        .map(t => t.dataset.table)""")
    assert {"crossover", "equal_concurrency", "equal_interactivity"} <= set(tables)
    assert page.errors == [] and page.remote == []
