"""Links from data are http(s) or nothing: a published row whose run_url is
a script URL is refused at ingest, and a point that carries one anyway (a run directory written
by hand, an older ingest) is drawn with no link, on the dashboard and on its point page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.publish.dashboards.page import write_dashboard
from harness.publish.ingest import IngestError, ingest
from harness.publish.links import web_link
from harness.record.results import RunDir

PWN = "javascript:window.__pwned='x';void 0"
ROWS = Path("scenarios/reference/dsr1_b200_rows.json")


def _published(n: int, source: str) -> dict:
    return {"point_id": f"c{n}-ix-{n:012d}", "run_id": "ix", "model": "dsr1", "precision": "fp8",
            "chip": "b200", "engine": "sglang", "spec_method": "none", "spec_k": 0, "tp": 8,
            "ep": 1, "dp_attention": False, "pp": 1, "gpus": 8, "scenario": "fixed-1k1k",
            "scenario_kind": "fixed", "isl": 1024, "osl": 1024, "conc": n, "valid": True,
            "status": "ok", "published": True, "source": source,
            "started_at": "2026-11-30T07:00:00", "tput_per_gpu": 100.0 * n,
            "median_intvty": 50.0 / n, "chip_power_kw_all_in": 1.0,
            "chip_cost_hyperscaler": 1.0, "chip_cost_neocloud": 1.0,
            "chip_cost_rental_3yr": 1.0}


@pytest.mark.parametrize(("url", "kept"), [
    ("https://github.com/x/y/actions/runs/1", True), ("http://example.com/a?b=c", True),
    (PWN, False), ("JavaScript:alert(1)", False), (" javascript:alert(1)", False),
    ("java\tscript:alert(1)", False), ("data:text/html,<script>x</script>", False),
    ("vbscript:x", False), ("//evil.example/x", False), ("/relative", False), ("", False),
    (None, False), (7, False), ("https://", False)])
def test_web_link_keeps_only_absolute_http_urls(url, kept) -> None:
    assert web_link(url) == (url if kept else None)


def test_ingest_refuses_a_row_whose_run_url_is_not_http(tmp_path) -> None:
    rows = json.loads(ROWS.read_text())
    rows[0]["run_url"] = PWN
    bad = tmp_path / "rows.json"
    bad.write_text(json.dumps(rows))
    with pytest.raises(IngestError, match=r"row 0: run_url .* is not an http"):
        ingest(bad, tmp_path / "ix")
    assert not (tmp_path / "ix" / "points.jsonl").exists()


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("links")
    run = RunDir.open(root, "ix")
    run.append_point(_published(1, PWN))
    run.append_point(_published(2, "https://example.com/run/2"))
    out = root / "d.html"
    write_dashboard([root / "ix"], out, "links")
    return out


def test_no_page_carries_a_script_url(dashboard: Path) -> None:
    pages = [dashboard, *dashboard.parent.rglob("*.html")]
    assert len(pages) >= 3  # the dashboard and both point pages
    for page in pages:
        text = page.read_text()
        assert "__pwned" not in text, page  # (Plotly's bundle itself spells "javascript:")
    assert "https://example.com/run/2" in dashboard.read_text()  # a web link stays


@pytest.mark.slow
def test_clicking_sources_runs_no_script_in_chromium(browser, dashboard: Path) -> None:
    pg = browser.new_page()
    pg.goto(dashboard.as_uri(), timeout=120_000)  # a busy shared machine loads Plotly slowly
    pg.wait_for_function("document.getElementById('chart').data !== undefined", timeout=60_000)
    hrefs = pg.eval_on_selector_all("#sources a", "as => as.map(a => a.getAttribute('href'))")
    assert hrefs == ["https://example.com/run/2"]
    # the page's own link builder drops a script URL even if one reached it
    kept = pg.evaluate("""() => { const a = el('a', {href: "javascript:window.__pwned='x'"}, 'x');
        document.body.appendChild(a); a.click(); return a.hasAttribute('href'); }""")
    assert kept is False and pg.evaluate("window.__pwned") is None
    pg.close()
