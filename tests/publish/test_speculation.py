"""Where speculation pays (harness/publish/speedup.py, spec_choice.py, spec_cost.py): ratios
on InferenceX's published MTP / non-MTP rows checked by hand, crossover, best k, break-even AL
and step costs on points whose answers are known, the CLI, and the refusal to inject where an
engine cannot."""

from __future__ import annotations

import json
import math

import pytest

from harness.client.sse import StreamAccumulator
from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.publish.spec_choice import al_map, best_k_by_load, best_k_by_target, break_even
from harness.publish.spec_cost import cost_rows
from harness.publish.spec_report import build, to_csv, to_markdown
from harness.publish.speedup import (
    crossover,
    crossovers,
    equal_concurrency,
    equal_interactivity,
    group_series,
)
from harness.record.results import read_points
from harness.records import RequestRecord
from harness.speculation.acceptance import resolve
from tests.helpers import harness

ROWS = "scenarios/reference/dsr1_b200_rows.json"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    out = tmp_path_factory.mktemp("ix") / "inferencex"
    r = harness("ingest-inferencex", ROWS, "--out", str(out))
    assert r.returncode == 0, r.stderr
    with open(ROWS) as f:
        return json.load(f), out


def _row(rows, framework, precision, isl, osl, spec, conc):
    return next(r for r in rows if (r["framework"], r["precision"], r["isl"], r["osl"],
                                    r.get("spec_method"), r["conc"])
                == (framework, precision, isl, osl, spec, conc))["metrics"]


def test_published_mtp_over_plain_at_equal_concurrency_by_hand(published) -> None:
    rows, out = published
    eq = equal_concurrency(group_series(read_points(out)))
    got = {(r["base"], r["conc"]): r for r in eq}
    # TRT FP8 1k/1k: MTP at 8; plain measured at 4 and 16, so plain at 8 is their midpoint
    # in log2(concurrency)
    mtp = _row(rows, "trt", "fp8", 1024, 1024, "mtp", 8)
    lo, hi = (_row(rows, "trt", "fp8", 1024, 1024, "none", c) for c in (4, 16))
    r = got[("deepseek-r1 fp8 · b200 · trtllm · fixed-1k1k (ISL 1024, OSL 1024)", 8)]
    assert r["plain_match"] == "interp"
    plain = (lo["median_intvty"] + hi["median_intvty"]) / 2
    assert r["intvty_ratio"].value == pytest.approx(mtp["median_intvty"] / plain)
    assert r["intvty_ratio"].value == pytest.approx(101.9 / 86.7, abs=0.01)
    plain_t = (lo["tput_per_gpu"] + hi["tput_per_gpu"]) / 2
    assert r["tput_ratio"].value == pytest.approx(mtp["tput_per_gpu"] / plain_t)
    assert r["intvty_ratio"].se is None  # one repeat: no standard error claimed
    # SGLang FP4 8k/1k: MTP at 4 between plain at 1 and 16: a quarter of the way... in log2,
    # log2(4) = 2 of log2(16) = 4: halfway
    mtp = _row(rows, "sglang", "fp4", 8192, 1024, "mtp", 4)
    lo, hi = (_row(rows, "sglang", "fp4", 8192, 1024, "none", c) for c in (1, 16))
    r = got[("deepseek-r1 fp4 · b200 · sglang · fixed-8k1k (ISL 8192, OSL 1024)", 4)]
    plain = (lo["median_intvty"] + hi["median_intvty"]) / 2
    assert r["intvty_ratio"].value == pytest.approx(mtp["median_intvty"] / plain)
    # MTP at 512 has no plain load above it: no row (never extrapolated)
    assert ("deepseek-r1 fp4 · b200 · sglang · fixed-8k1k (ISL 8192, OSL 1024)", 512) \
        not in got


def test_published_mtp_over_plain_at_equal_interactivity_by_hand(published) -> None:
    rows, out = published
    plain_x = _row(rows, "trt", "fp8", 1024, 1024, "none", 16)
    target = plain_x["median_intvty"]  # a plain frontier point: its throughput exactly
    eq = equal_interactivity(group_series(read_points(out)), [target])
    r = next(r for r in eq if r["base"].startswith("deepseek-r1 fp8 · b200 · trtllm · "
                                                   "fixed-1k1k"))
    assert r["plain_tput"] == pytest.approx(plain_x["tput_per_gpu"])
    # MTP's frontier is two points (conc 256 and 8). The frontier spline (curves.py, as the
    # page draws it) takes end slopes (3s - m_other) / 2 there: 1.5 s at the first point and
    # 0.75 s at the second, s the chord's slope; the cubic Hermite between them, by hand:
    a = _row(rows, "trt", "fp8", 1024, 1024, "mtp", 256)
    b = _row(rows, "trt", "fp8", 1024, 1024, "mtp", 8)
    x0, x1 = a["median_intvty"], b["median_intvty"]
    y0, y1 = a["tput_per_gpu"], b["tput_per_gpu"]
    h, s = x1 - x0, (y1 - y0) / (x1 - x0)
    u = (target - x0) / h
    spec = ((2 * u**3 - 3 * u**2 + 1) * y0 + (u**3 - 2 * u**2 + u) * h * 1.5 * s
            + (-2 * u**3 + 3 * u**2) * y1 + (u**3 - u**2) * h * 0.75 * s)
    assert r["spec_tput"] == pytest.approx(spec)
    assert r["tput_ratio"] == pytest.approx(spec / plain_x["tput_per_gpu"])
    assert r["tput_ratio"] == pytest.approx(4.25, abs=0.01)


def _pt(conc, intvty, spec="none", k=0, mode="none", al=None, rep=0, tput=None, **extra):
    return {"model": "m", "chip": "cpu", "engine": "llamacpp", "precision": "q4",
            "scenario": "s", "scenario_kind": "fixed", "isl": 128, "osl": 64, "conc": conc,
            "repeat": rep, "valid": True, "status": "ok", "spec_method": spec, "spec_k": k,
            "spec_acceptance_mode": mode, "spec_acceptance_length": al,
            "median_intvty": intvty, "tput_per_gpu": tput if tput is not None else
            intvty * conc, **extra}


def test_crossover_interpolates_in_log_load_and_its_range_comes_from_repeats() -> None:
    pts = [_pt(1, 100), _pt(2, 80), _pt(4, 60),
           _pt(1, 107, "ngram", 4, "real"), _pt(2, 76, "ngram", 4, "real"),
           _pt(4, 48, "ngram", 4, "real")]
    cross = crossovers(equal_concurrency(group_series(pts)))[0]["crossover_conc"]
    # ratio 1.07 at 1, 0.95 at 2: crosses 1 at 0.07/0.12 of the way from log2 1 to log2 2
    assert cross.kind == "crosses"
    assert cross.conc == pytest.approx(2 ** (0.07 / 0.12))
    assert cross.lo is None  # single repeats: no range claimed
    reps = [*pts, _pt(1, 100, rep=1), _pt(2, 80, rep=1), _pt(4, 60, rep=1),
            _pt(1, 113, "ngram", 4, "real", rep=1), _pt(2, 84, "ngram", 4, "real", rep=1),
            _pt(4, 48, "ngram", 4, "real", rep=1)]
    rows = equal_concurrency(group_series(reps))
    c = crossover(rows)
    assert rows[1]["intvty_ratio"].value == pytest.approx(1.0)  # 80 / 80 at load 2
    assert rows[1]["intvty_ratio"].se == pytest.approx(4 / 80)  # sd 5.66 / sqrt 2 / 80
    assert c.kind == "crosses" and c.lo < c.conc < c.hi
    assert c.conc == pytest.approx(2.0)


def test_crossover_says_which_side_when_the_ratio_never_falls_below_one() -> None:
    faster = [_pt(1, 100), _pt(2, 80), _pt(1, 120, "ngram", 4, "real"),
              _pt(2, 90, "ngram", 4, "real")]
    c = crossover(equal_concurrency(group_series(faster)))
    assert c.kind == "always_above" and "> 2" in c.text()
    slower = [_pt(1, 100), _pt(2, 80), _pt(1, 90, "ngram", 4, "real"),
              _pt(2, 70, "ngram", 4, "real")]
    assert crossover(equal_concurrency(group_series(slower))).kind == "always_below"


def test_invalid_points_are_left_out_unless_asked_and_then_marked() -> None:
    pts = [_pt(1, 100), _pt(1, 300, "ngram", 4, "real", valid=False),
           _pt(2, 80, status="failed", valid=False)]
    assert equal_concurrency(group_series(pts)) == []
    (row,) = equal_concurrency(group_series(pts, include_invalid=True))
    assert row["valid"] == "NO" and row["intvty_ratio"].value == pytest.approx(3.0)


def test_best_k_per_load_and_target_with_the_margin() -> None:
    pts = [_pt(1, 100), _pt(4, 60)]
    for k, (i1, i4) in {1: (110, 58), 2: (125, 55), 3: (120, 50)}.items():
        pts += [_pt(1, i1, "ngram", k, "real"), _pt(4, i4, "ngram", k, "real")]
    rows = {r["conc"]: r for r in best_k_by_load(group_series(pts))}
    assert (rows[1]["best"], rows[1]["runner_up"]) == ("k=2", "k=3")
    assert rows[1]["margin"] == pytest.approx(125 / 120 - 1)
    assert (rows[4]["best"], rows[4]["runner_up"]) == ("off", "k=1")  # plain wins at load
    assert rows[4]["margin"] == pytest.approx(60 / 58 - 1)
    by_target = best_k_by_target(group_series(pts), [100.0])
    vals = by_target[0]["values"]
    assert by_target[0]["best"] == max(vals, key=lambda k: vals[k] if math.isfinite(
        vals[k]) else -1)


def test_break_even_al_is_where_the_ratio_reaches_one() -> None:
    assert break_even([1.5, 2.5, 3.5], [0.8, 0.95, 1.25]) == pytest.approx(2.5 + 1 / 6)
    assert break_even([1.5, 2.5], [1.1, 1.2]) is None
    pts = [_pt(1, 100)]
    for al, v in ((1.4, 70), (1.8, 90), (2.2, 110)):
        pts.append(_pt(1, v, "draft_model", 2, "injected", al, spec_realised_al=al + 0.01))
    row = al_map(group_series(pts))[0]
    assert row["break_even_al"] == pytest.approx(2.0)
    assert row["realised"][1.8] == pytest.approx(1.81)


def test_step_cost_from_counters() -> None:
    # 1000 tokens generated, 600 of them accepted drafts: 400 steps, 2.5 tokens per step;
    # 250 drafts of 1000 draft tokens: 4 drafts per verify step, on 62.5% of the steps. TPOT
    # 10 ms against plain 9 ms: a mean step costs 25 ms = 2.78 plain steps; with the 150
    # undrafted steps at one plain step each, a drafting step costs (400 x 2.78 - 150) / 250
    # = 3.84 plain steps (> half its width of 5: compute-bound); 2.5 / 2.78 = 0.9x.
    pts = [_pt(1, 111, median_tpot=0.009),
           _pt(1, 100, "ngram", 4, "real", median_tpot=0.010, spec_drafts=250,
               spec_draft_tokens=1000, spec_accepted_tokens=600,
               server_generation_tokens=1000)]
    (row,) = cost_rows(group_series(pts))
    assert row["drafts_per_step"] == pytest.approx(4.0)
    assert row["tokens_per_step"] == pytest.approx(2.5)
    assert row["drafted_share"] == pytest.approx(0.625)
    cost = 0.025 / 0.009
    assert row["cost_plain_steps"] == pytest.approx(cost)
    assert row["verify_cost_plain_steps"] == pytest.approx((400 * cost - 150) / 250)
    assert row["speedup"] == pytest.approx(2.5 / cost)
    assert row["speedup"] == pytest.approx(0.009 / 0.010)  # the TPOT ratio, split in two
    assert row["why"].startswith("compute-bound: verifying 4.0 drafts costs 3.8 plain steps")
    # a plain reference slower than this point's undrafted steps: no verify cost claimed
    faster = [_pt(1, 111, median_tpot=0.1), *pts[1:]]
    (row,) = cost_rows(group_series(faster))
    assert math.isnan(row["verify_cost_plain_steps"]) and "not estimable" in row["why"]


def test_report_markdown_and_csv(published) -> None:
    _, out = published
    tables = build(read_points(out))
    md = to_markdown(tables)
    assert "mtp (published)" in md and "Crossover load" in md
    csv_text = to_csv(tables)
    assert csv_text.splitlines()[0].startswith("table,base,speculator,conc")
    assert "equal_interactivity" in csv_text


def test_cli_writes_markdown_and_csv(published, tmp_path) -> None:
    _, out = published
    r = harness("speculation", str(out), "--csv", str(tmp_path / "s.csv"),
                "--md", str(tmp_path / "s.md"), "--targets", "60")
    assert r.returncode == 0, r.stderr
    assert "Speedup at equal interactivity" in r.stdout
    assert (tmp_path / "s.md").read_text() in r.stdout + "\n"
    assert "equal_interactivity" in (tmp_path / "s.csv").read_text()
    bad = harness("speculation", str(tmp_path / "nothing"))
    assert bad.returncode == 2 and "no points.jsonl" in bad.stderr


def test_llamacpp_per_request_draft_counts_are_kept() -> None:
    events = [b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n',
              b'data: {"choices":[{"finish_reason":"length","delta":{}}],'
              b'"timings":{"predicted_n":2,"draft_n":8,"draft_n_accepted":5}}\n\n',
              b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}\n\n',
              b"data: [DONE]\n\n"]
    for strict in (False, True):
        acc = StreamAccumulator(strict=strict)
        for i, e in enumerate(events):
            acc.feed(e, float(i))
        rec = RequestRecord("r", "measured", 5, 2)
        acc.finish(rec, 9.0)
        assert (rec.spec_draft_tokens, rec.spec_accepted_tokens) == (8, 5)
        assert rec.error == ""


def test_fixed_sequence_injection_only_on_engines_that_can() -> None:
    sc = compose_sweep(["speculator=self_draft", "speculator.acceptance.mode=injected",
                        "speculator.acceptance.length=2.0"])
    assert resolve(sc, can_inject=True, where="w").length == 2.0  # llama.cpp synth_rates
    ep = compose_sweep(["engine=endpoint", "engine.url=http://x", "speculator=self_draft",
                        "speculator.acceptance.mode=injected",
                        "speculator.acceptance.length=2.0"])
    with pytest.raises(ConfigError) as ei:
        resolve(ep, can_inject=bool(ep.engine.can_inject_acceptance), where="w")
    assert ei.value.key == "speculator.acceptance.mode"
    assert "cannot force an acceptance length" in ei.value.problem


def test_point_page_per_request_acceptance() -> None:
    import numpy as np

    from harness.publish.dashboards.point_data import spec_requests

    r = {"completion_tokens": np.array([64, 64, 58, 10]),
         "spec_draft_tokens": np.array([40, 0, 12, -1]),
         "spec_accepted_tokens": np.array([32, 0, 6, -1])}
    keep = np.array([True, True, True, True])
    got = spec_requests(r, keep)
    assert got["n"] == 3  # the request without counts is left out
    per_step = sorted(got["tokens_per_step"]["cdf_x"])
    assert per_step == pytest.approx([1.0, 58 / 52, 64 / 32])
    assert (got["drafted"], got["accepted"]) == (52.0, 38.0)
    assert spec_requests({k: v for k, v in r.items() if k == "completion_tokens"}, keep) \
        is None


def test_our_point_without_an_acceptance_mode_is_not_labelled_published(tmp_path) -> None:
    """Provenance, not a missing field, makes a row published: our own n-gram points written
    without `spec_acceptance_mode` (older records, hand-built runs) are ours in the CLI's
    tables, and an ingested row stays published."""
    run = tmp_path / "ours"
    run.mkdir()
    pts = [_pt(1, 100), _pt(2, 80), _pt(1, 120, "ngram", 4), _pt(2, 85, "ngram", 4)]
    for i, p in enumerate(pts):
        p.pop("spec_acceptance_mode")
        p.update(point_id=f"c{p['conc']}-r0-{i:012d}", run_id="ours", valid=i != 3,
                 invalid_reasons=[] if i != 3 else ["test"])
    (run / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pts))
    r = harness("speculation", "--include-invalid", str(run))
    assert r.returncode == 0, r.stderr
    assert "ngram k=4 (acceptance not recorded)" in r.stdout, r.stdout
    assert "(published)" not in r.stdout
    ix = _pt(1, 90, "mtp", 3, point_id="c1-ix-000000000001", published=True)
    ix.pop("spec_acceptance_mode")
    assert group_series([ix]).popitem()[0][1].label() == "mtp k=3 (published)"
