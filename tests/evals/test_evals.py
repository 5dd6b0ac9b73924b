"""The correctness checks (harness.evals): evals through lm-eval and the lossless check, shown
to pass on a server that answers right and to fail on one that answers wrong or whose
speculator changes the output (harness.testing.answer_server, real HTTP on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.evals import lossless as ll
from harness.evals.accuracy import run_task
from harness.evals.tasks import data_for, floor_for
from harness.evals.verdicts import eval_rule, lossless_rule
from harness.record.results import RunDir
from harness.testing.spawn import spawn_server

REPO = Path(__file__).resolve().parents[2]
SLICE = REPO / "data" / "evals" / "gsm8k" / "test.jsonl"
SERVER = "harness.testing.answer_server"


def test_greedy_comparison_names_the_first_divergence_and_both_tokens() -> None:
    ref = [["a", "b", "c"], ["x", "y"], ["p", "q"]]
    spec = [["a", "b", "c"], ["x", "z"], ["p"]]
    v = ll.compare_greedy(ref, spec)
    assert (v.prompts, v.identical) == (3, 1) and not v.ok
    assert v.divergences == (ll.Divergence(1, 1, "y", "z"), ll.Divergence(2, 1, "q", ll.END))
    assert v.diverged_share == pytest.approx(2 / 3)


def test_sampled_comparison_passes_one_distribution_and_fails_a_biased_one() -> None:
    rng = np.random.default_rng(1)

    def draw(p: list[float], n: int) -> list[list[str]]:
        return [[str(rng.choice(3, p=p)) for _ in range(4)] for _ in range(n)]

    same = ll.compare_sampled([draw([0.5, 0.3, 0.2], 60)], [draw([0.5, 0.3, 0.2], 60)],
                              0.7, 4, 0.01)
    assert same.ok and same.tests == 4
    off = ll.compare_sampled([draw([0.5, 0.3, 0.2], 60)], [draw([0.1, 0.3, 0.6], 60)],
                             0.7, 4, 0.01)
    assert not off.ok and off.p_adjusted < 0.01


def test_eval_data_missing_or_swebench_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"eval\.data_dir"):
        data_for("gsm8k", str(tmp_path), "the eval recipe", REPO)
    with pytest.raises(ConfigError, match="Docker"):
        data_for("swebench_lite", None, "the eval recipe", REPO)
    assert data_for("gsm8k", "data/evals", "x", REPO).source == "local"
    assert data_for("gsm8k", None, "x", REPO).path == "openai/gsm8k"
    assert floor_for("gsm8k", {}) == (0.90, floor_for("gsm8k", {})[1])
    assert floor_for("gsm8k", {"gsm8k": 0.94})[0] == 0.94


def test_floors_live_in_model_recipes_and_bad_tasks_are_refused() -> None:
    assert compose_sweep(["model=deepseek-r1"]).model.eval_floors["gsm8k"] == 0.91
    with pytest.raises(ConfigError, match=r"eval\.tasks"):
        compose_sweep(["eval.tasks=[mmlu]"])


@pytest.mark.slow  # lm-eval's import alone takes seconds
@pytest.mark.parametrize("wrong", [False, True])
def test_gsm8k_through_lm_eval_passes_a_right_server_and_fails_a_wrong_one(wrong: bool) -> None:
    sc = compose_sweep(["eval=gsm8k-slice", "eval.limit=6"])
    args = ["--answers", str(SLICE), *(["--wrong"] if wrong else [])]
    with spawn_server(SERVER, *args) as port:
        r = run_task("gsm8k", f"http://127.0.0.1:{port}", "emulated", sc.eval, 2, 8192,
                     {}, REPO)
    assert r.n == 6 and r.settings["num_fewshot"] == 5 and r.settings["max_tokens"] == 256
    assert r.floor == 0.90
    rule = eval_rule(r)
    if wrong:
        assert r.score == 0.0 and not r.passed and not rule.ok and "floor" in rule.message
    else:
        assert r.score == 1.0 and r.passed and rule.ok


def _outputs(port: int, temperature: float, seeds: list[int]) -> list[list[list[str]]]:
    prompts = ll.slice_prompts(REPO, 6)
    return ll.collect(f"http://127.0.0.1:{port}", "emulated", prompts, 24, temperature, seeds)


def test_lossless_check_passes_exact_speculation_and_fails_a_perturbed_verifier() -> None:
    with (spawn_server(SERVER) as base, spawn_server(SERVER, "--speculative") as exact,
          spawn_server(SERVER, "--speculative", "--perturb-verified", "0.2") as broken):
        ref = [r[0] for r in _outputs(base, 0.0, [1])]
        good = ll.compare_greedy(ref, [r[0] for r in _outputs(exact, 0.0, [1])])
        bad = ll.compare_greedy(ref, [r[0] for r in _outputs(broken, 0.0, [1])])
    assert good.ok and good.identical == 6
    assert not bad.ok and bad.divergences
    assert all(d.position % 4 != 0 for d in bad.divergences)  # a verified position
    result = ll.LosslessResult(greedy=[bad])
    assert lossless_rule(result)[0].ok is False and "diverges" in result.verdict()


def test_lossless_check_above_zero_fails_a_sampler_bias() -> None:
    seeds = list(range(40))
    with (spawn_server(SERVER) as base, spawn_server(SERVER, "--speculative") as exact,
          spawn_server(SERVER, "--speculative", "--sampler-bias", "0.3") as biased):
        ref = _outputs(base, 0.7, seeds)
        good = ll.compare_sampled(ref, _outputs(exact, 0.7, [s + 1000 for s in seeds]),
                                  0.7, 4, 0.01)
        bad = ll.compare_sampled(ref, _outputs(biased, 0.7, [s + 1000 for s in seeds]),
                                 0.7, 4, 0.01)
    assert good.ok, good
    assert not bad.ok and bad.p_adjusted < 0.01


def test_check_results_amend_every_point_of_the_job(tmp_path: Path) -> None:
    from harness.sweep.correctness import record

    run = RunDir.open(tmp_path, "r1")
    for pid in ("a", "b", "c"):
        run.append_point({"point_id": pid, "status": "ok", "valid": True, "validity": []})
    bad = ll.LosslessResult(greedy=[ll.compare_greedy([["x"]], [["y"]])])
    record(run, "job0", {"a", "b"}, [], bad, 1.0)
    lines = {p["point_id"]: p for p in run.points()}
    assert lines["a"]["valid"] is False and lines["a"]["lossless_ok"] is False
    assert "LOSSY" in lines["b"]["lossless_verdict"]
    assert lines["c"]["valid"] is True and "lossless_verdict" not in lines["c"]
    saved = json.loads((run.root / "correctness" / "job0.json").read_text())
    assert saved["lossless"]["greedy"][0]["divergences"][0]["position"] == 0


def test_the_tooltip_carries_the_lossless_verdict_and_the_eval_score() -> None:
    from harness.publish.dashboards.page import hover_lines

    p = {"model": "m", "chip": "cpu", "engine": "llamacpp", "precision": "q4_1",
         "spec_method": "ngram", "spec_k": 4, "conc": 1, "valid": False,
         "scenario": "fixed-128x64", "scenario_kind": "fixed",
         "lossless_verdict": "LOSSY: T=0: diverges in 25% of prompts (2/8; first at token 3)",
         "eval_results": [{"task": "gsm8k", "score": 0.1, "stderr": 0.1, "n": 10,
                           "floor": 0.9, "passed": False}]}
    lines = hover_lines(p)
    assert any(line.startswith("lossless check: LOSSY: T=0: diverges in 25%") for line in lines)
    assert any("eval gsm8k: 0.1" in line and "BELOW" in line for line in lines)


@pytest.mark.slow  # lm-eval's import alone takes seconds
def test_harness_eval_on_an_attached_server_exits_1_below_the_floor(tmp_path: Path) -> None:
    from harness.cli.main import main

    out = tmp_path / "eval.json"
    with spawn_server(SERVER, "--answers", str(SLICE), "--wrong") as port:
        rc = main(["eval", "eval=gsm8k-slice", "eval.limit=4", "model=deepseek-r1",
                   "engine=endpoint", f"engine.url=http://127.0.0.1:{port}", "--out",
                   str(out)])
    saved = json.loads(out.read_text())
    assert rc == 1 and saved[0]["score"] == 0.0 and saved[0]["floor"] == 0.91
    assert saved[0]["floor_source"] == "model.eval_floors" and saved[0]["n"] == 4


def test_a_divergence_is_inconclusive_when_the_engine_is_not_deterministic_alone() -> None:
    diverged = ll.compare_greedy([["a", "b"]], [["a", "c"]])
    steady = ll.LosslessResult(greedy=[diverged], control=ll.compare_greedy([["a"]], [["a"]]))
    assert not steady.ok and "LOSSY" in steady.verdict()
    shaky = ll.LosslessResult(greedy=[diverged], control=ll.compare_greedy([["a"]], [["b"]]))
    assert shaky.ok and "inconclusive" in shaky.verdict() and lossless_rule(shaky)[0].ok


def test_an_inconclusive_batched_control_is_settled_one_request_at_a_time(tmp_path: Path
                                                                          ) -> None:
    # Both servers change tokens at random while another request is in flight (as llama.cpp
    # with busy slots does): the batched T=0 control fails, so the check compares again one
    # request at a time, where the exact speculator passes and the broken verifier is caught.
    from harness.cli.main import main

    def check(*spec_flags: str, out: Path, retry: bool = True) -> tuple[int, dict]:
        with (spawn_server(SERVER, "--batch-noise", "0.3") as base,
              spawn_server(SERVER, "--batch-noise", "0.3", "--speculative", *spec_flags)
              as spec):
            rc = main(["check", "lossless", "engine=endpoint", "speculator=ngram",
                       f"engine.url=http://127.0.0.1:{spec}", "model.name=emulated",
                       "lossless.prompts=6", "lossless.max_tokens=16",
                       f"lossless.serial_retry={str(retry).lower()}",
                       "--base-url", f"http://127.0.0.1:{base}", "--out", str(out)])
        return rc, json.loads(out.read_text())

    rc, exact = check(out=tmp_path / "exact.json")
    assert exact["control"]["identical"] < 6  # batched: not deterministic
    assert exact["serial_control"]["identical"] == 6 and exact["serial"]["identical"] == 6
    assert rc == 0 and exact["ok"] and "one request at a time: token-identical on 6/6" in (
        exact["verdict"])
    rc, broken = check("--perturb-verified", "0.3", out=tmp_path / "broken.json")
    assert rc == 1 and not broken["ok"] and broken["serial"]["divergences"]
    assert broken["verdict"].startswith("LOSSY")
    rc, unsettled = check("--perturb-verified", "0.3", out=tmp_path / "off.json", retry=False)
    assert rc == 0 and unsettled["serial"] is None and "inconclusive" in unsettled["verdict"]


def test_a_near_tie_of_the_reference_is_numerics_and_a_wide_gap_is_lossy() -> None:
    ref, spec = [["a", "b", "c"], ["x", "y"]], [["a", "b", "d"], ["x", "y"]]
    tops = [[{"a": -0.1}, {"b": -0.2}, {"c": -0.69, "d": -0.71}], [{"x": 0.0}, {"y": 0.0}]]
    tied = ll.compare_greedy(ref, spec, 0.0, tops, tie_margin=0.05)
    assert tied.divergences[0].margin == pytest.approx(0.02) and tied.near_ties and tied.ok
    assert "near-tie" in ll.LosslessResult(greedy=[tied]).verdict()
    assert not ll.compare_greedy(ref, spec, 0.0, tops, tie_margin=0.01).ok  # 0.02 > 0.01
    assert not ll.compare_greedy(ref, spec, 0.0, tops).ok  # strict by default
    unseen = [[{"a": 0.0}, {"b": 0.0}, {"c": -0.1}], tops[1]]  # "d" not among the tops
    wide = ll.compare_greedy(ref, spec, 0.0, unseen, tie_margin=5.0)
    assert wide.divergences[0].margin is None and not wide.ok
    assert "1 beyond the tie margin" in ll.LosslessResult(greedy=[wide]).verdict()


def test_the_tie_margin_does_not_excuse_a_broken_verifier(tmp_path: Path) -> None:
    # The answer server's top token leads the next by at least log 1.5 nats: a perturbed
    # verified token is never a near-tie at a sane margin, only at an absurd one.
    from harness.cli.main import main

    def check(margin: float, out: Path) -> tuple[int, dict]:
        with (spawn_server(SERVER) as base,
              spawn_server(SERVER, "--speculative", "--perturb-verified", "0.3") as spec):
            rc = main(["check", "lossless", "engine=endpoint", "speculator=ngram",
                       f"engine.url=http://127.0.0.1:{spec}", "model.name=emulated",
                       "lossless.prompts=6", "lossless.max_tokens=16",
                       f"lossless.tie_margin={margin}", "lossless.top_logprobs=12",
                       "--base-url", f"http://127.0.0.1:{base}", "--out", str(out)])
        return rc, json.loads(out.read_text())

    rc, sane = check(0.1, tmp_path / "sane.json")
    divs = sane["greedy"][0]["divergences"]
    assert rc == 1 and divs and all(d["margin"] >= np.log(1.5) - 1e-9 for d in divs)
    rc, absurd = check(50.0, tmp_path / "absurd.json")
    assert rc == 0 and "near-tie" in absurd["verdict"]


def test_the_t0_verdict_is_lossy_only_where_a_repeatable_comparison_diverged_widely() -> None:
    ref, spec = [["a", "b"], ["x", "y"]], [["a", "c"], ["x", "y"]]
    tie = [[{"a": 0.0}, {"b": -0.70, "c": -0.74}], [{"x": 0.0}, {"y": 0.0}]]
    wide = [[{"a": 0.0}, {"b": -0.1, "c": -3.0}], [{"x": 0.0}, {"y": 0.0}]]
    same = ll.compare_greedy(ref, ref)
    shaky = ll.compare_greedy(ref, spec)  # a control that did not repeat itself

    def result(batched_tops, control, serial_tops=None, serial_control=same):
        serial = None if serial_tops is None else ll.compare_greedy(ref, spec, 0.0,
                                                                    serial_tops, 0.25)
        return ll.LosslessResult(greedy=[ll.compare_greedy(ref, spec, 0.0, batched_tops, 0.25)],
                                 control=control, serial=serial, serial_control=serial_control)

    assert result(tie, same).ok  # a near-tie where the control repeated itself: numerics
    assert not result(wide, same).ok  # a wide gap there: lossy
    assert result(wide, shaky).ok  # batched and not repeatable: inconclusive
    assert not result(wide, shaky, wide).ok  # one at a time, repeatable, wide: lossy
    assert result(wide, shaky, wide, serial_control=shaky).ok  # not repeatable either
    assert result(tie, same, tie).ok and "numerics" in result(tie, same, tie).verdict()
