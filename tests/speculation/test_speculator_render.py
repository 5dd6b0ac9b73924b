"""What the adapters render for the speculators upstream runs, read back with the same rule the
catalog importer applies to upstream's commands (harness.speculation.drafters): a recipe round-trips
to the method, drafter, k and sample method it names."""

from __future__ import annotations

import json

import pytest

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.validate import check_combinations
from harness.engines.registry import make_adapter
from harness.speculation.acceptance import resolve
from harness.speculation.drafters import speculator_from_server_argv
from harness.workloads.registry import check_kinds

K3 = ["model=kimi-k3", "chip=b300", "speculator=dspark", "scenarios=agentic-weka",
      "thinking=true", "topology.tp=8"]


def _launch(overrides):
    sc = compose_sweep(overrides)
    plan = resolve(sc, can_inject=True, where="w")
    return sc, plan, make_adapter(sc, plan).launch_plan(8000, 8)


def test_vllm_kimi_k3_dspark_probabilistic_injected_at_k7() -> None:
    _, _, p = _launch(["engine=vllm", *K3])
    cfg = json.loads(p.argv[p.argv.index("--speculative-config") + 1])
    assert cfg == {"method": "dspark", "num_speculative_tokens": 7,
                   "model": "Inferact/Kimi-K3-DSpark", "draft_sample_method": "probabilistic",
                   "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 3.84}
    assert speculator_from_server_argv("vllm", p.argv, p.env) == {
        "method": "dspark", "k": 7, "draft_model": "Inferact/Kimi-K3-DSpark",
        "sample_method": "probabilistic", "acceptance_length": 3.84}
    # real acceptance with block rejection, as the script's EVAL_ONLY branch runs it
    _, _, real = _launch(["engine=vllm", *K3, "speculator.sample_method=probabilistic-block",
                          "speculator.acceptance.mode=real"])
    got = speculator_from_server_argv("vllm", real.argv, real.env)
    assert got["sample_method"] == "probabilistic-block" and got["acceptance_length"] is None


def test_atom_dspark_carries_its_draft_model_and_the_curve_value() -> None:
    # agentic/kimik3_fp4_mi355x_atom_mtp.sh at conc 1: k=6, AL 3.75 (probabilistic curve)
    _, plan, p = _launch(["engine=atom", K3[0], "chip=mi355x", *K3[2:],
                          "speculator.k=6"])
    assert plan.length == 3.75
    got = speculator_from_server_argv("atom", p.argv, p.env)
    assert got == {"method": "dspark", "k": 6, "draft_model": "Inferact/Kimi-K3-DSpark",
                   "sample_method": None, "acceptance_length": 3.75}


def test_atom_keeps_an_upstream_rate_instead_of_adding_the_length() -> None:
    sc = compose_sweep(["engine=atom", "model=glm-5.2", "chip=mi355x", "speculator=mtp",
                        "speculator.k=3", "scenarios=agentic-weka", "thinking=true",
                        "precision=fp4-amd", "topology.tp=8",
                        "engine.argv_template=[python,-m,atom.entrypoints.openai_server,"
                        "--model,'{model}',--server-port,'{port}',--method,mtp,"
                        "--num-speculative-tokens,'3',--spec-decode-acceptance-rate,'0.663333']"])
    plan = resolve(sc, can_inject=True, where="w")
    argv = make_adapter(sc, plan).launch_plan(8000, 4).argv
    assert "--spec-decode-acceptance-length" not in argv
    assert speculator_from_server_argv("atom", argv, {})["acceptance_length"] == 2.99


def test_minimax_gqa_drafter_on_vllm_injects_2_78() -> None:
    _, plan, p = _launch(["engine=vllm", "model=minimax-m3", "chip=b300", "speculator=eagle3",
                          "speculator.draft_model=Inferact/MiniMax-M3-EAGLE3-GQA",
                          "scenarios=agentic-weka", "thinking=true", "topology.tp=4"])
    got = speculator_from_server_argv("vllm", p.argv, p.env)
    assert got["draft_model"] == "Inferact/MiniMax-M3-EAGLE3-GQA"
    assert got["acceptance_length"] == plan.length == 2.78


@pytest.mark.parametrize("engine", ["sglang", "trtllm", "atom"])
def test_probabilistic_drafts_on_an_engine_without_the_knob_need_an_injected_point(
        engine) -> None:
    base = [f"engine={engine}", "model=glm-5.2", "speculator=mtp",
            "speculator.sample_method=probabilistic"]
    with pytest.raises(ConfigError) as ei:
        check_kinds(compose_sweep([*base, "scenarios=fixed-1k1k"]), lambda key: "w")
    assert ei.value.key == "speculator.sample_method" and "drafts greedily" in ei.value.problem
    # an injected point borrows the curve; the engine's forced acceptance replaces verification
    sc = compose_sweep([*base, "scenarios=agentic-weka", "thinking=true", "chip=b300"])
    check_combinations(sc, lambda key: "w")
    check_kinds(sc, lambda key: "w")
    with pytest.raises(ConfigError, match="unknown sample method 'beam'"):
        compose_sweep(["engine=vllm", "model=glm-5.2", "speculator=mtp",
                       "speculator.sample_method=beam"])
