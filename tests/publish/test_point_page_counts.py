"""What a point page says, read as text from the page `harness dashboard` writes: what realised
AL and per-request AL each count, where the engine was not steady, and the server's token rate
over the client's window."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np

from harness.cli.main import main
from harness.record.bench_rules import bench_rules
from harness.record.results import RunDir
from harness.record.validity import ValiditySettings
from harness.record.workload_traits import built_in_traits
from harness.records import PHASE_MEASURED
from tests.publish.dashboard_fixtures import base_point, records

FIXED = built_in_traits("fixed")


def _text(page: Path) -> str:
    body = page.read_text().split('<script type="application/json"')[0]
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def _slowed(recs: list) -> list:
    """Four measured requests decode four times slower, as beside a neighbour."""
    for r in [r for r in recs if r.phase == PHASE_MEASURED][:4]:
        span = r.last_token_ts - r.first_token_ts
        r.last_token_ts = r.first_token_ts + 4 * span
    return recs


def test_the_page_says_what_each_al_counts_and_where_the_engine_was_not_steady(
        tmp_path: Path) -> None:
    run = RunDir.open(tmp_path, "ours")
    rng = np.random.default_rng(3)
    recs = _slowed(records(14, rng, agentic=False))
    measured = [r for r in recs if r.phase == PHASE_MEASURED]
    rules, facts = bench_rules({}, {"num_completed": 12}, FIXED, ValiditySettings(),
                               measured)
    assert any(r.name == "engine_steady" and not r.ok for r in rules)
    plain = base_point("c2-plain", "fixed", 2, 900.0, 50.0, valid=False, schema_version=2,
                       validity=[{"name": r.name, "ok": r.ok, "observed": r.observed,
                                  "bound": r.bound, "message": r.message,
                                  "remedy": r.remedy, "fatal": r.fatal} for r in rules],
                       total_output_tokens=640, server_generation_tokens=640,
                       duration_s=14.3, **facts)
    spec = base_point("c2-ngram", "fixed", 2, 1500.0, 80.0, spec_method="ngram", spec_k=4,
                      spec_realised_al=3.075, spec_drafts=200, spec_draft_tokens=800,
                      spec_accepted_tokens=415, total_output_tokens=1300)
    for p in (plain, spec):
        run.write_requests(p["point_id"], recs if p is plain else records(14, rng, False))
        run.append_point(p)
    out = tmp_path / "d.html"
    assert main(["dashboard", str(run.root), "--out", str(out)]) == 0

    text = _text(tmp_path / "d_points" / "ours" / "c2-ngram-k4-ngram.html")  # id + speculator, k
    assert "Realised AL (3.075) counts the engine's counters over the measured window" in text
    assert "only the steps on which the speculator drafted count" in text
    assert "Per-request AL (the histogram) counts each request's reply" in text
    assert "every step counts, drafted or not" in text
    # 1300 output tokens less 415 accepted: 885 steps, 200 of them drafted
    assert "drafted on 200 of about 885 decode steps (23%)" in text
    assert "not steady" not in text

    text = _text(tmp_path / "d_points" / "ours" / "c2-plain.html")
    assert "Realised AL" not in text  # a plain point has no acceptance to explain
    slow = facts["decode_slowest"]
    assert len(slow) == 2 and {s["id"] for s in slow} <= {r.request_id for r in measured[:4]}
    assert "The engine was not steady (rule engine_steady)" in text
    for s in slow:
        assert f"{s['id']} decoded at" in text
        assert f"from {s['from_s']:.4g} s to {s['to_s']:.4g} s" in text
    # the server's rate over the client's own window, and why its series looks spiky
    assert ("Over the measured window (14.3 s) the client received 640 output tokens "
            "(44.8 tok/s) and the server's counter rose by 640 (44.8 tok/s).") in text
    assert "llama.cpp adds a request's tokens to its counter when the request finishes" in text


def test_the_unsteady_spans_are_shaded_on_the_charts_over_time(browser, tmp_path: Path) -> None:
    run = RunDir.open(tmp_path, "ours")
    recs = _slowed(records(14, np.random.default_rng(3), agentic=False))
    rules, facts = bench_rules({}, {"num_completed": 12}, FIXED, ValiditySettings(),
                               [r for r in recs if r.phase == PHASE_MEASURED])
    p = base_point("c2-plain", "fixed", 2, 900.0, 50.0, valid=False, schema_version=2,
                   validity=[{"name": r.name, "ok": r.ok, "observed": r.observed,
                              "bound": r.bound, "message": r.message, "remedy": r.remedy,
                              "fatal": r.fatal} for r in rules], **facts)
    run.write_requests(p["point_id"], recs)
    run.append_point(p)
    out = tmp_path / "d.html"
    assert main(["dashboard", str(run.root), "--out", str(out)]) == 0
    pg = browser.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto((tmp_path / "d_points" / "ours" / "c2-plain.html").as_uri())
    pg.wait_for_function("document.getElementById('over-time').layout !== undefined")
    spans = pg.evaluate("""() => document.getElementById('over-time').layout.shapes
        .filter(s => s.fillcolor === 'rgba(214,39,40,0.12)').map(s => [s.x0, s.x1])""")
    pg.close()
    assert errors == []
    assert sorted(spans) == sorted([s["from_s"], s["to_s"]] for s in facts["decode_slowest"])
