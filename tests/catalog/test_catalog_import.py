"""The InferenceX importer on a miniature checkout of ours (tests/fixtures/inferencex_mini/, see
its README): each script there puts one obstacle in the way, and the captured argv, environment
and files are asserted exactly. The importer runs upstream-shaped files under bash in a sandbox
(harness/catalog/sandbox.py: mount + PID namespaces), so these tests need `unshare`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.catalog.client_settings import client_settings
from harness.catalog.importer import CheckoutState, import_checkout
from harness.catalog.masters import load_masters, load_runners
from harness.catalog.matrix import concurrencies, expand
from harness.catalog.report import render
from harness.catalog.sandbox import Sandbox
from harness.catalog.workflow import evaluate, substitute

MINI = Path(__file__).parents[1] / "fixtures" / "inferencex_mini"
BS = "/workspace/utils/bench_serving/benchmark_serving.py"


def _sandbox_works() -> bool:
    box = Sandbox(MINI)
    try:
        run = box.run("true", {"PATH": "/usr/bin:/bin"}, 10)
        return run.finished_by == "exit" and run.exit_code == 0
    except OSError:
        return False
    finally:
        box.close()


needs_sandbox = pytest.mark.skipif(not shutil.which("unshare") or not _sandbox_works(),
                                   reason="the capture sandbox needs unshare with mount and PID "
                                          "namespaces (root or user namespaces)")


def _git_checkout(dst: Path) -> Path:
    shutil.copytree(MINI, dst)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "mini"]):
        subprocess.run(["git", "-C", str(dst), *args], check=True)
    return dst


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("mini")
    checkout = _git_checkout(root / "ix")
    out = root / "out"
    state, results = import_checkout(checkout, out, workers=2, bound_s=15,
                                     progress=lambda s: None)
    return state, {r.mk.key: r for r in results}, out, checkout


def test_matrix_follows_upstreams_rules() -> None:
    assert concurrencies({"conc-start": 1, "conc-end": 6}) == [1, 2, 4, 6]  # last clamped
    assert concurrencies({"conc-start": 4, "conc-end": 4}) == [4]
    assert concurrencies({"conc-list": [3, 9]}) == [3, 9]
    masters = {m.key: m for m in load_masters(MINI)}
    runners = load_runners(MINI)
    assert {k: m.kind for k, m in masters.items()} == {
        "toy-fp8-h200-sglang": "fixed", "toy-fp4-b200-trt": "fixed",
        "toy-fp4-b200-vllm-agentic": "agentic", "toy-bf16-h200-sglang": "fixed",
        "toy-fp8-gb200-dynamo-sglang": "multinode", "toy-fp8-mi300x-sglang": "fixed"}
    (_, job), = expand(masters["toy-fp4-b200-vllm-agentic"], runners)
    # 2,000,000 MiB x 0.5 utilization x 4 of 8 GPUs, in decimal GB
    assert job["total-cpu-dram-gb"] == 524 and job["duration"] == 3600
    assert job["exp-name"] == "toy_tp4_conc2_kvdram-vllm-simple_spec-mtp"
    jobs = [j for _, j in expand(masters["toy-fp4-b200-trt"], runners)]
    assert [j["conc"] for j in jobs] == [1, 2, 4, 6]
    assert {j["max-model-len"] for j in jobs} == {1024 + 1024 + 256}
    assert {j["exp-name"] for j in jobs} == {"toy_1k1k"}


def test_workflow_expressions() -> None:
    ctx = {"inputs": {"scenario-type": "agentic-coding", "dp-attn": False, "x": ""}}
    expr = "inputs.scenario-type == 'agentic-coding' && 'agentic/' || 'fixed_seq_len/'"
    assert evaluate(expr, ctx) == "agentic/"
    assert substitute("a${{ inputs.dp-attn }}b${{ inputs.x || 'dflt' }}", ctx) == "afalsebdflt"
    assert evaluate("contains(github.event.pull_request.labels.*.name, 'x')",
                    {"github": {"event": {}}}) is False


def test_checkout_notes_say_dirty_and_branchless() -> None:
    notes = CheckoutState("a" * 40, dirty=True, branches=[]).notes()
    assert any("uncommitted" in n for n in notes) and any("no named branch" in n for n in notes)
    assert CheckoutState("a" * 40, dirty=False, branches=["main"]).notes() == []


@needs_sandbox
def test_background_server_health_loop_install_and_patch(imported) -> None:
    state, res, *_ = imported
    assert state.branches == ["main"] and not state.dirty
    key = res["toy-fp8-h200-sglang"]
    assert [c["status"] for c in key.launches] == ["ok", "ok"]
    c4, c8 = key.launches
    assert c4["script"] == "benchmarks/single_node/fixed_seq_len/toy_fp8_h200.sh"
    assert c4["runner_node"] == "h200-x_0" and c4["commit"] == state.commit
    assert c4["server"]["argv"] == [
        "python3", "-m", "sglang.launch_server", "--model-path", "toy-org/Toy-8B", "--host",
        "0.0.0.0", "--port", "8888", "--tp", "8", "--chunked-prefill-size", "8192",
        "--context-length", "9472"]
    assert "16384" in c8["server"]["argv"]  # the script's CONC branch
    # exported before the server: in its env; set without export: not
    assert c4["server"]["env_added"] == {"SGLANG_TOY_FLAG": "1"}
    assert c4["env_in"]["LAUNCHER_MARK"] == "h200" and c4["env_in"]["CONC"] == "4"
    assert c4["setup"] == [
        {"kind": "command", "argv": ["hf", "download", "toy-org/Toy-8B"]},
        {"kind": "install", "argv": ["pip", "install", "--no-deps", "toy-kernels==1.0"]},
        {"kind": "patch", "argv": ["sed", "-i", "s/slow_path/fast_path/",
                                   "/usr/lib/python3/dist-packages/sglang/srt/toy.py"]},
        # a patch script: one step, its path in the container's checkout, not run
        {"kind": "patch", "argv": ["bash", "/workspace/benchmarks/single_node/fixed_seq_len/"
                                   "apply_toy_patches.sh"]},
        # an ordinary sub-script ran (its output was checked), its unknown command recorded
        {"kind": "command", "argv": ["toy-unknown-tool", "--probe"], "unknown": True}]
    assert c4["client"] == {"tool": "benchmark_serving", "env": {"SGLANG_TOY_FLAG": "1"}, "argv": [
        "python3", BS, "--model", "toy-org/Toy-8B", "--base-url", "http://0.0.0.0:8888",
        "--dataset-name", "random", "--random-input-len", "8192", "--random-output-len", "1024",
        "--random-range-ratio", "0.8", "--num-prompts", "40", "--max-concurrency", "4",
        "--request-rate", "inf", "--ignore-eos", "--num-warmups", "8",
        "--result-filename", "toy_8k1k_fp8_tp8_conc4.json"]}


@needs_sandbox
def test_heredoc_yaml_mpirun_and_runner_naming(imported) -> None:
    _, res, *_ = imported
    launches = res["toy-fp4-b200-trt"].launches
    assert [(c["conc"], c["status"]) for c in launches] == [(1, "ok"), (2, "ok"), (4, "ok"),
                                                           (6, "ok")]
    c = launches[2]
    # b200-nolauncher_0 has no launcher; b200-y_0's falls back to the historical _trt name
    assert c["runner_node"] == "b200-y_0"
    assert c["script"] == "benchmarks/single_node/fixed_seq_len/toy_fp4_b200_trt.sh"
    assert c["server"]["argv"] == [
        "mpirun", "-n", "1", "--allow-run-as-root", "trtllm-serve", "toy-org/Toy-8B-FP4",
        "--port=8000", "--tp_size=4", "--ep_size=4", "--extra_llm_api_options=toy-extra.yml"]
    assert [x["server"]["files"] for x in launches] == [
        {"/workspace/toy-extra.yml": f"cuda_graph_config:\n    max_batch_size: {b}\n"
                                     "enable_attention_dp: true\n"} for b in (1, 2, 1, 1)]


@needs_sandbox
def test_agentic_router_helper_and_aiperf(imported) -> None:
    _, res, *_ = imported
    (c,) = res["toy-fp4-b200-vllm-agentic"].launches
    assert c["status"] == "ok" and c["scenario"] == "agentic-coding"
    assert c["script"] == "benchmarks/single_node/agentic/toy_fp4_b200_vllm_mtp.sh"
    assert c["env_in"]["TOTAL_CPU_DRAM_GB"] == "524" and c["env_in"]["KV_OFFLOADING"] == "dram"
    assert c["server"]["argv"] == [
        "vllm", "serve", "toy-org/Toy-8B-FP4", "--port", "8001", "--tensor-parallel-size", "4",
        "--kv-offloading-size", "524", "--speculative-config",
        '{"method":"mtp","num_speculative_tokens":2}']
    assert [h["argv"] for h in c["helpers"]] == [
        ["vllm-router", "--port", "8000", "--worker-urls", "http://127.0.0.1:8001"]]
    assert c["client"]["tool"] == "aiperf"
    assert c["client"]["argv"] == [
        "aiperf", "profile", "--url", "http://localhost:8000", "--concurrency", "2",
        "--benchmark-duration", "3600", "--warmup-requests-per-lane", "10",
        "--public-dataset", "toy_traces", "--warmup-grace-period", "1800"]
    settings, unhonoured = client_settings(c["client"])
    assert settings["dataset"] == "toy_traces" and settings["duration_s"] == 3600
    assert any("--warmup-grace-period" in u for u in unhonoured)
    # the uv venv the script builds is an install step, after the server (not setup)
    assert c["setup"] == []


@needs_sandbox
def test_a_file_the_script_writes_for_its_server_is_captured_and_templated(imported) -> None:
    """The Mooncake-style config the script writes into RESULT_DIR and names in the server's
    environment: kept in the capture with the job's values, and carried into the recipe row
    with the port as {port+N} (harness/catalog/launch_files.py)."""
    from harness.catalog.launch_files import row_files

    _, res, *_ = imported
    (c,) = res["toy-fp4-b200-vllm-agentic"].launches
    path = "/workspace/results/mooncake_config.json"
    assert c["server"]["env_added"]["MOONCAKE_CONFIG_PATH"] == path
    text = ('{\n  "master_server_address": "127.0.0.1:20000",\n'
            '  "global_segment_size": "131GB"\n}\n')
    assert c["server"]["files"] == {path: text}
    assert row_files(c) == {"results/mooncake_config.json": text.replace(
        "{", "{{").replace("}", "}}").replace("20000", "{port+12000}")}


@needs_sandbox
def test_docker_launcher_passes_only_its_env(imported) -> None:
    _, res, *_ = imported
    (c,) = res["toy-fp8-mi300x-sglang"].launches
    assert c["status"] == "ok"
    assert c["env_in"] == {
        "MODEL": "toy-org/Toy-8B", "TP": "8", "CONC": "16", "ISL": "8192", "OSL": "1024",
        "MAX_MODEL_LEN": "9472", "RESULT_FILENAME": "toy_8k1k_fp8_tp8_conc16",
        "RANDOM_RANGE_RATIO": "0.8", "PORT": "9999", "HIP_FORCE": "1"}
    assert c["server"]["argv"][-4:] == ["--port", "9999", "--tp", "8"]
    settings, unhonoured = client_settings(c["client"])
    assert settings["chat_template"] is True and settings["requests_per_conc"] == 10
    assert settings["warmup_per_conc"] == 2 and unhonoured == []


@needs_sandbox
def test_missing_script_is_a_reason_not_a_crash(imported) -> None:
    _, res, out, _ = imported
    (c,) = res["toy-bf16-h200-sglang"].launches
    assert c["status"] == "failed" and c["server"] is None
    assert c["reason"] == ("benchmarks/single_node/fixed_seq_len/toymissing_bf16_h200.sh does "
                           "not exist at this commit: the launcher of runner node h200-x_0 "
                           "names it for this key")
    assert json.loads((out / "captured" / "toy-bf16-h200-sglang.json").read_text())[
        "launches"][0]["status"] == "failed"


@needs_sandbox
def test_every_key_is_written_and_reported(imported) -> None:
    state, res, out, _ = imported
    written = {p.stem for p in (out / "captured").glob("*.json")}
    assert written == set(res)
    multi = json.loads((out / "captured" / "toy-fp8-gb200-dynamo-sglang.json").read_text())
    assert multi["kind"] == "multinode" and multi["launches"] == []
    md = render(state, list(res.values()), "mini")
    assert "toymissing_bf16_h200.sh does not exist" in md
    assert "| toy | fixed | 3 / 3 | 7 / 7 |" in md
    assert "| toymissing | fixed | 0 / 1 | 0 / 1 |" in md
    assert "| **all** | **fixed** | **3 / 4** | **7 / 8** |" in md
    assert "| toy | multinode | 1 / 1 | 2 / 2 |" in md
    assert "sed -i s/slow_path/fast_path/" in md
    assert "--warmup-grace-period" in md


def test_cli_refuses_a_missing_directory(tmp_path: Path, capsys) -> None:
    from harness.cli.catalog import catalog_command

    assert catalog_command(["import", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


@needs_sandbox
def test_rewrite_without_capturing_keeps_every_key(imported, tmp_path: Path) -> None:
    state, res, out, checkout = imported
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    state2, again = import_checkout(checkout, copy, capture=False, progress=lambda s: None)
    assert state2.commit == state.commit
    assert {r.mk.key: r.ok for r in again} == {k: r.ok for k, r in res.items()}
    doc = json.loads((copy / "captured" / "toy-fp8-mi300x-sglang.json").read_text())
    assert doc["launches"][0]["client_settings"]["chat_template"] is True
    assert doc["launches"][0]["client_unhonoured"] == []


@needs_sandbox
def test_the_sandbox_does_not_see_the_hosts_tmp(tmp_path: Path) -> None:
    """What the host left in /tmp (upstream's run_aiperf makes /tmp/aiperf-venv, and a script
    that finds it skips its install) is not there inside; the records and a kept stand-in
    directory are, and nothing written to /tmp inside reaches the host."""
    left = tmp_path / "aiperf-venv"
    left.mkdir()
    kept = tmp_path / "standins"
    kept.mkdir()
    (kept / "tool").write_text("kept")
    box = Sandbox(MINI, keep=(kept,))
    try:
        run = box.run(f"test ! -e {left} && test \"$(cat {kept}/tool)\" = kept && "
                      f"test -d {box.base / 'rec'} && touch {tmp_path}/inside",
                      {"PATH": "/usr/bin:/bin"}, 10)
    finally:
        box.close()
    assert (run.finished_by, run.exit_code) == ("exit", 0), run.output
    assert not (tmp_path / "inside").exists()


def test_precision_is_the_model_recipes_key_for_the_jobs_checkpoint() -> None:
    """InferenceX's one word `fp4` covers several checkpoints; the recipe names the key whose
    checkpoint the jobs load, and a checkpoint no key names stops that key."""
    from harness.catalog.checkpoints import captured_model, precision_for
    from harness.catalog.multinode import CatalogError

    assert precision_for("k", "deepseek-r1", "amd/DeepSeek-R1-0528-MXFP4-Preview",
                         "fp4") == "fp4-amd-preview"
    assert precision_for("k", "qwen3.5-397b-a17b", "nvidia/Qwen3.5-397B-A17B-NVFP4-V2",
                         "fp4") == "fp4-v2"
    assert precision_for("k", "deepseek-v4-pro", "deepseek-ai/DeepSeek-V4-Pro", "fp4") == "fp4"
    with pytest.raises(CatalogError, match=r"^k: .*amd/Other.* recipes/model/deepseek-r1.yaml"):
        precision_for("k", "deepseek-r1", "amd/Other", "fp4")
    jobs = [{"job": {"model": "a/b"}}, {"job": {"model": "a/c"}}]
    with pytest.raises(CatalogError, match=r"^k: launches name"):
        captured_model("k", jobs)
    assert captured_model("k", [{"job": {}}], "a/b") == "a/b"


def test_client_recipe_takes_corpus_seed_api_and_template_or_refuses() -> None:
    from harness.catalog.client_recipe import client_recipe
    from harness.catalog.multinode import CatalogError

    def agentic(corpus: str, seed: str = "42") -> dict:
        return {"setup": [{"argv": ["hf", "download", "--repo-type", "dataset", corpus]}],
                "client": {"tool": "aiperf", "argv": [
                    "aiperf", "profile", "--public-dataset", "x", "--random-seed", seed]}}

    assert client_recipe("k", [agentic("o/c-256k")] * 2) == {
        "seed": 42, "scenario": {"dataset": {"id": "o/c-256k"}}}
    with pytest.raises(CatalogError, match=r"^k: launches differ in the corpus"):
        client_recipe("k", [agentic("o/a"), agentic("o/b")])
    bs = ["python3", "benchmark_serving.py", "--max-concurrency", "4", "--random-input-len",
          "8", "--random-output-len", "8", "--random-range-ratio", "0.8", "--num-prompts", "40",
          "--use-chat-template", "--endpoint", "/v1/chat/completions"]
    assert client_recipe("k", [{"client": {"tool": "benchmark_serving", "argv": bs}}]) == {
        "scenario": {"chat_template": True, "api": "chat"}}


def test_staged_paths_become_repositories_and_machine_paths_are_found() -> None:
    from harness.catalog.local_paths import localize, shipped_local_paths

    cap = {"env_in": {"HF_HUB_CACHE": "/mnt/hf_hub_cache/", "MODEL_PATH": "/lustre/m"},
           "setup": [{"argv": ["hf", "download", "org/draft", "--local-dir", "/scratch/d"]},
                     {"argv": ["hf", "download", "org/model"]},
                     {"argv": ["hf", "download", "org/x", "--local-dir", "/lustre/m"]}],
           "server": {"cwd": "/workspace", "files": {"/workspace/t/c.jinja": "x"},
                      "argv": ["serve", "/mnt/hf_hub_cache/models--org--model/snapshots/"
                               "0000000000", "--draft", "/scratch/d", "--model-path",
                               "/lustre/m", "--chat-template", "s/../t/c.jinja"]}}
    out = localize(cap)
    assert out["server"]["argv"] == ["serve", "org/model", "--draft", "org/draft",
                                     "--model-path", "/lustre/m", "--chat-template",
                                     "/workspace/t/c.jinja"]
    assert cap["server"]["argv"][1].startswith("/mnt/")  # the capture itself is untouched
    assert shipped_local_paths({"a": ["x", "/scratch/m/chat_template.jinja"]}) == [
        "/scratch/m/chat_template.jinja"]
