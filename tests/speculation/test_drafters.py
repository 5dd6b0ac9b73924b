"""speculator_from_server_argv on server commands as InferenceX's scripts write them
(InferenceX@843c6254 benchmarks/single_node/), and the curve each one injects."""

from __future__ import annotations

import json

import pytest

from harness.speculation.acceptance import load_table, lookup, sample_method_for
from harness.speculation.drafters import flag_value, speculator_from_server_argv


def vllm(cfg: dict) -> list[str]:
    return ["vllm", "serve", "/models/m", "--port", "8888",
            "--speculative-config", json.dumps(cfg), "--compilation-config", "{}"]


def test_vllm_dspark_probabilistic_with_its_drafter_and_injected_al() -> None:
    # agentic/kimik3_fp4_b300_vllm_mtp.sh, conc <= 8
    got = speculator_from_server_argv("vllm", vllm({
        "method": "dspark", "model": "/data/models/Kimi-K3-DSpark", "num_speculative_tokens": 7,
        "attention_backend": "TOKENSPEED_MLA", "draft_sample_method": "probabilistic",
        "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 3.84}), {})
    assert got == {"method": "dspark", "k": 7, "draft_model": "/data/models/Kimi-K3-DSpark",
                   "sample_method": "probabilistic", "acceptance_length": 3.84}
    # its EVAL_ONLY branch: real block rejection
    real = speculator_from_server_argv("vllm", vllm({
        "method": "dspark", "model": "Inferact/Kimi-K3-DSpark", "num_speculative_tokens": 2,
        "draft_sample_method": "probabilistic", "rejection_sample_method": "block"}), {})
    assert (real["sample_method"], real["acceptance_length"]) == ("probabilistic-block", None)


def test_vllm_eagle3_gqa_and_mtp() -> None:
    # agentic/minimaxm3_fp4_b300_mtp.sh (printf-rendered, compact JSON)
    got = speculator_from_server_argv("vllm", ["vllm", "serve", "m", "--speculative-config="
        '{"method":"eagle3","model":"/data/models/MiniMax-M3-EAGLE3-GQA",'
        '"num_speculative_tokens":3,"attention_backend":"FLASH_ATTN",'
        '"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.78}'], {})
    assert got == {"method": "eagle3", "k": 3,
                   "draft_model": "/data/models/MiniMax-M3-EAGLE3-GQA",
                   "sample_method": "greedy", "acceptance_length": 2.78}
    mtp = speculator_from_server_argv("vllm", vllm({
        "method": "deepseek_mtp", "num_speculative_tokens": 3}), {})
    assert (mtp["method"], mtp["k"], mtp["draft_model"]) == ("mtp", 3, None)
    assert speculator_from_server_argv("vllm", ["vllm", "serve", "m"], {}) is None
    # k=0: the Kimi-K3 B300 script's "no drafting" arm passes no config at all; zero is none
    assert speculator_from_server_argv("vllm", vllm({"method": "dspark",
                                                     "num_speculative_tokens": 0}), {}) is None


def test_sglang_eagle_on_an_mtp_head_with_simulated_acceptance() -> None:
    # agentic/glm5.2_fp4_b300_sglang_mtp.sh
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", "m",
            "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    env = {"SGLANG_SIMULATE_ACC_LEN": "2.99", "SGLANG_SIMULATE_ACC_METHOD": "match-expected"}
    assert speculator_from_server_argv("sglang", argv, env) == {
        "method": "mtp", "k": 3, "draft_model": None, "sample_method": "greedy",
        "acceptance_length": 2.99}
    drafted = speculator_from_server_argv("sglang", [
        *argv[:5], "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "2",
        "--speculative-draft-model-path", "org/d"], {})
    assert (drafted["method"], drafted["k"], drafted["draft_model"]) == ("eagle3", 2, "org/d")


def test_trtllm_eagle3_from_the_options_yaml() -> None:
    # agentic/minimaxm3_fp4_b300_trt_mtp.sh: heredoc YAML, --config, force knob = AL - 1
    yml = ("speculative_config:\n    decoding_type: Eagle3\n    max_draft_len: 3\n"
           "    speculative_model: /data/models/MiniMax-M3-EAGLE3-GQA\n")
    got = speculator_from_server_argv(
        "trtllm", ["trtllm-serve", "m", "--config", "ser.yaml"],
        {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "1.78"}, {"ser.yaml": yml})
    assert got == {"method": "eagle3", "k": 3,
                   "draft_model": "/data/models/MiniMax-M3-EAGLE3-GQA",
                   "sample_method": "greedy", "acceptance_length": pytest.approx(2.78)}
    mtp = speculator_from_server_argv("trtllm", ["trtllm-serve", "m"], {}, {
        "/workspace/x.yml": "speculative_config:\n  decoding_type: MTP\n"
                            "  num_nextn_predict_layers: 3\n"})
    assert (mtp["method"], mtp["k"], mtp["acceptance_length"]) == ("mtp", 3, None)


def test_atom_dspark_draft_model_and_the_rate_spelling() -> None:
    # agentic/kimik3_fp4_mi355x_atom_mtp.sh at conc 1
    argv = ["python", "-m", "atom.entrypoints.openai_server", "--model", "m", "--method",
            "dspark", "--draft-model", "Inferact/Kimi-K3-DSpark", "--num-speculative-tokens",
            "6", "--spec-decode-acceptance-length", "3.75"]
    got = speculator_from_server_argv("atom", argv, {})
    assert got == {"method": "dspark", "k": 6, "draft_model": "Inferact/Kimi-K3-DSpark",
                   "sample_method": None, "acceptance_length": 3.75}
    # ATOM cannot say how it drafts: the curve whose k=6 value was injected says it
    table = load_table()
    method = sample_method_for(table, "kimi-k3", "dspark", 6, True, 3.75,
                               "Inferact/Kimi-K3-DSpark")
    assert method == "probabilistic-block"
    assert lookup(table, "kimi-k3", "dspark", 6, True, draft="Inferact/Kimi-K3-DSpark",
                  sample_method=method).al == 3.75
    # agentic/glm5.2_fp4_mi355x_atom_mtp.sh: awk prints (2.99-1)/3
    glm = speculator_from_server_argv("atom", ["--method", "mtp", "--num-speculative-tokens",
                                               "3", "--spec-decode-acceptance-rate",
                                               "0.663333"], {})
    assert (glm["method"], glm["k"], glm["acceptance_length"]) == ("mtp", 3, 2.99)
    assert speculator_from_server_argv("atom", ["--model", "m"], {}) is None


def test_flag_values_and_unknown_engines() -> None:
    assert flag_value(["--a", "1", "--a=2"], "--a") == "2"
    assert flag_value(["--a"], "--a") is None
    with pytest.raises(ValueError, match="unknown engine kind 'tilert'"):
        speculator_from_server_argv("tilert", [], {})
