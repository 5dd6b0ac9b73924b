"""Golden commands: the exact argument list, environment and files each engine gets."""

from __future__ import annotations

import json
import sys

import yaml

from harness.config.compose import compose_sweep
from harness.config.launches import launches
from harness.engines.registry import make_adapter
from harness.speculation.acceptance import AcceptancePlan

PY = sys.executable


# The adapters' own flags (no argv_template): the catalog recipes' shapes spelled as overrides.
# The catalog recipes themselves (recipes/recipe/, upstream commands) are golden-tested in
# tests/test_catalog_golden.py.
SGLANG_FP4_B200_TP4_MTP3 = ["engine=sglang", "model=deepseek-r1", "chip=b200", "speculator=mtp",
                            "speculator.k=3", "scenarios=fixed-8k1k", "precision=fp4",
                            "topology.tp=4"]
VLLM_FP8_H200_TP8_MTP1 = ["engine=vllm", "model=deepseek-r1", "chip=h200", "speculator=mtp",
                          "speculator.k=1", "scenarios=fixed-1k1k", "precision=fp8",
                          "topology.tp=8"]
TRT_FP4_B200_DEP8_MTP3 = ["engine=trtllm", "model=deepseek-r1", "chip=b200", "speculator=mtp",
                          "speculator.k=3", "scenarios=fixed-1k8k", "precision=fp4",
                          "topology.tp=8", "topology.ep=8", "topology.dp_attention=true"]


def _plan(overrides, acceptance=None, port=30000, conc=128):
    sc = compose_sweep(overrides)
    if sc.search_space:  # a catalog recipe: its first launch
        sc = launches(sc)[0].sc
    a = make_adapter(sc, acceptance)
    return a.launch_plan(port, conc)


def test_sglang_dsr1_fp4_b200_tp4_mtp3() -> None:
    p = _plan(SGLANG_FP4_B200_TP4_MTP3)
    assert p.argv == [
        PY, "-m", "sglang.launch_server",
        "--model-path", "nvidia/DeepSeek-R1-0528-FP4-V2", "--served-model-name", "dsr1",
        "--host", "127.0.0.1", "--port", "30000", "--tp", "4", "--enable-metrics",
        "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
        "--disable-radix-cache", "--context-length", str(8192 + 1024 + 256),
        "--max-running-requests", "128",
    ]
    assert p.env == {}


def test_sglang_injection_environment() -> None:
    p = _plan(["recipe=dsr1-fp4-b200-sglang-mtp"], AcceptancePlan("injected", 2.49, "t"))
    assert p.env == {"SGLANG_RADIX_FORCE_MISS": "1", "PYTHONNOUSERSITE": "1",  # the script's
                     "SGLANG_ENABLE_SPEC_V2": "1", "GPU_METRICS_CSV": "gpu_metrics.csv",
                     "SGLANG_SIMULATE_ACC_LEN": "2.49",
                     "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                     "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}


def test_vllm_dsr1_fp8_h200_tp8_mtp() -> None:
    p = _plan(VLLM_FP8_H200_TP8_MTP1, port=8000, conc=64)
    assert p.argv == [
        PY, "-m", "vllm.entrypoints.openai.api_server",
        "--model", "deepseek-ai/DeepSeek-R1-0528", "--served-model-name", "dsr1",
        "--host", "127.0.0.1", "--port", "8000", "--tensor-parallel-size", "8",
        "--max-model-len", str(1024 + 1024 + 256), "--max-num-seqs", "64",
        "--no-enable-prefix-caching",
        "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}',
    ]


def test_vllm_synthetic_acceptance_config() -> None:
    p = _plan([*VLLM_FP8_H200_TP8_MTP1, "speculator.k=3"],
              AcceptancePlan("injected", 2.5, "t"))
    spec = json.loads(p.argv[p.argv.index("--speculative-config") + 1])
    assert spec == {"method": "mtp", "num_speculative_tokens": 3,
                    "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}


def test_vllm_ngram_and_dp_attention() -> None:
    p = _plan(["engine=vllm", "model=llama-3.3-70b", "chip=h100", "speculator=ngram",
               "scenarios=fixed-1k1k", "topology.tp=8", "topology.dp_attention=true"], conc=16)
    i = p.argv.index("--tensor-parallel-size")
    assert p.argv[i:i + 5] == ["--tensor-parallel-size", "1", "--data-parallel-size", "8",
                               "--enable-expert-parallel"]
    spec = json.loads(p.argv[p.argv.index("--speculative-config") + 1])
    assert spec == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4,
                    "prompt_lookup_min": 2}


def test_trtllm_dsr1_fp4_b200_dep8_mtp3_with_extra_options_yaml() -> None:
    p = _plan(TRT_FP4_B200_DEP8_MTP3, conc=256)
    assert p.argv == [
        "trtllm-serve", "nvidia/DeepSeek-R1-0528-FP4-V2", "--host", "127.0.0.1",
        "--port", "30000", "--backend", "pytorch", "--tp_size", "8", "--ep_size", "8",
        "--pp_size", "1", "--max_seq_len", str(1024 + 8192 + 256), "--max_batch_size", "256",
        "--extra_llm_api_options", "extra_llm_api_options.yaml",
    ]
    assert yaml.safe_load(p.files["extra_llm_api_options.yaml"]) == {
        "enable_attention_dp": True,
        # what /prometheus/metrics needs to carry the speculative counters
        "return_perf_metrics": True, "enable_iter_perf_stats": True,
        "kv_cache_config": {"enable_block_reuse": False},
        "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 3},
    }
    assert p.env == {}


def test_trtllm_forced_acceptance_counts_drafts_only() -> None:
    # the catalog recipe (upstream command and YAML) gets the same knob
    p = _plan(["recipe=dsr1-fp4-b200-trt-mtp"], AcceptancePlan("injected", 2.5, "t"))
    # the knob, beside what the script exports (its GPU monitor's file name)
    assert p.env == {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "1.5",
                     "GPU_METRICS_CSV": "gpu_metrics.csv"}


def test_atom_mtp_with_injected_acceptance() -> None:
    p = _plan(["engine=atom", "model=deepseek-r1", "chip=mi355x", "speculator=mtp",
               "speculator.k=3", "scenarios=fixed-8k1k", "topology.tp=8"],
              AcceptancePlan("injected", 2.8, "t"), port=8000)
    # ATOM's own flag names, as InferenceX's scripts pass them (--server-port, -tp)
    assert p.argv == [
        PY, "-m", "atom.entrypoints.openai_server", "--model", "deepseek-ai/DeepSeek-R1-0528",
        "--server-port", "8000", "-tp", "8",
        "--method", "mtp", "--num-speculative-tokens", "3",
        "--max-model-len", str(8192 + 1024 + 256),
        "--spec-decode-acceptance-length", "2.8",
    ]


def test_container_image_wraps_the_command_and_passes_env_by_name() -> None:
    p = _plan(["recipe=dsr1-fp4-b200-sglang-mtp", "engine.image=lmsysorg/sglang:v0.5.23"],
              AcceptancePlan("injected", 2.49, "t"))
    assert p.argv[:9] == ["docker", "run", "--rm", "--network", "host", "--ipc", "host",
                          "--gpus", "all"]
    assert "-e" in p.argv and "SGLANG_SIMULATE_ACC_LEN" in p.argv
    assert "2.49" not in p.argv  # values stay in the environment
    i = p.argv.index("lmsysorg/sglang:v0.5.23")
    assert p.argv[i + 1:i + 4] == ["python3", "-m", "sglang.launch_server"]  # the script's
    assert "{launch_dir}:/launch" in p.argv


def test_no_engine_builds_a_shell_string() -> None:
    for ov in (["recipe=dsr1-fp4-b200-sglang-mtp"], VLLM_FP8_H200_TP8_MTP1,
               ["recipe=dsr1-fp4-b200-trt-mtp"], ["recipe=dsr1-fp8-mi355x-atom-mtp"],
               ["engine=vllm", "engine.extra_args=[--x, 'a b; rm -rf /']"]):
        p = _plan(ov)
        assert isinstance(p.argv, list) and all(isinstance(a, str) for a in p.argv)
        assert "sh" not in p.argv[:1] and "-c" not in p.argv[:2]
    # the last plan is the hostile one's (composed once, not again)
    assert p.argv[-1] == "a b; rm -rf /"  # one argument, never interpreted by a shell


def test_pyxis_runs_the_engine_inside_the_slurm_allocation() -> None:
    p = _plan(["recipe=dsr1-fp4-b200-sglang-mtp", "engine.image=lmsysorg/sglang:v0.5.23",
               "engine.container_runtime=pyxis"])
    assert p.argv[:6] == ["srun", "--overlap", "--ntasks=1",
                          "--container-image=lmsysorg/sglang:v0.5.23",
                          "--container-mounts={launch_dir}:/launch",
                          "--container-workdir=/launch"]
    assert p.argv[7:10] == ["python3", "-m", "sglang.launch_server"]


def _adapter(overrides):
    sc = compose_sweep(overrides)
    if sc.search_space:  # a catalog recipe: its first launch
        sc = launches(sc)[0].sc
    return make_adapter(sc)


def test_stream_interval_per_engine() -> None:
    """The tokens per streamed chunk each engine is launched with, from its own spelling of
    the setting; a point records it because ITL is per chunk."""
    assert _adapter(["recipe=dsr1-fp4-b200-sglang-mtp"]).stream_interval == 10  # argv flag
    assert _adapter(["recipe=dsr1-fp8-b200-sglang"]).stream_interval == 30
    assert _adapter(["recipe=dsr1-fp4-b200-trt-mtp"]).stream_interval == 10  # YAML key
    assert _adapter(["recipe=dsr1-fp8-h200-trt"]).stream_interval == 10
    assert _adapter(["recipe=dsv4-fp4-b200-vllm"]).stream_interval == 1  # vLLM's default
    assert _adapter([*VLLM_FP8_H200_TP8_MTP1, "engine.extra_args=['--stream-interval=4']"]
                    ).stream_interval == 4
    assert _adapter([*SGLANG_FP4_B200_TP4_MTP3, "engine.extra_args=['--stream-interval','8']"]
                    ).stream_interval == 8
    assert _adapter(TRT_FP4_B200_DEP8_MTP3).stream_interval == 1
    assert _adapter([*TRT_FP4_B200_DEP8_MTP3, "+engine.extra_options.stream_interval=6"]
                    ).stream_interval == 6
    assert _adapter(["engine=llamacpp"]).stream_interval == 1


def test_stream_interval_that_is_not_a_count_is_refused() -> None:
    import pytest

    from harness.config.errors import ConfigError

    with pytest.raises(ConfigError, match="--stream-interval"):
        _adapter([*SGLANG_FP4_B200_TP4_MTP3, "engine.extra_args=['--stream-interval',many]"])
    with pytest.raises(ConfigError, match="stream_interval"):
        _adapter([*TRT_FP4_B200_DEP8_MTP3, "+engine.extra_options.stream_interval=0"])


def test_a_point_records_the_engines_stream_interval(tmp_path) -> None:
    """ITL is per chunk: the point says how many tokens a chunk may carry."""
    from harness.record.metrics import GpuCount
    from harness.record.results import RunDir
    from harness.record.validity import settings_for
    from harness.sweep.point import JobContext
    from harness.sweep.runner import plan_points, run_point
    from tests.sweep.test_runner_loop import FakeSession, SyntheticWorkload, _record

    for extra, want in (([], 1), (["engine.extra_args=['--stream-interval','10']"], 10)):
        # a launched engine: an attached one's flags are its own (engine.extra_args is refused
        # there, since nothing the harness passes would reach it)
        sc = compose_sweep(["engine=vllm", "model=deepseek-r1", "chip=h200", "run_id=unit",
                            "concurrency=[1]", *extra])
        wl = SyntheticWorkload([_record(i) for i in range(10)])
        adapter = make_adapter(sc, hints=wl.hints())
        ctx = JobContext(sc, "unit", "job0", adapter, wl, 1, "rev", settings_for(sc),
                         GpuCount(1))
        run = RunDir.open(tmp_path / str(want), "unit")
        rec = run_point(ctx, FakeSession(), plan_points(sc)[0], run)
        assert adapter.stream_interval == rec.metrics["stream_interval"] == want
