"""Small captured launches in the importer's capture format, written by hand from
the scripts' text at SemiAnalysisAI/InferenceX@843c6254, for the recipe writer's and the render
test's own checks until (and beside) the shipped captures of recipes/recipe/captured/:

- vLLM agentic (benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh): a TP8 row, and a
  DEP8 row with SimpleCPUOffloadConnector and vllm-router in front on PORT (engine on PORT+1);
- SGLang fixed with a job-time install and an in-image patch before the server;
- TensorRT-LLM fixed with its extra-options YAML file."""

from __future__ import annotations

import json
from typing import Any

COMMIT = "843c6254ff69b567f772f6a5fd97675af3d04431"
DSV4 = "deepseek-ai/DeepSeek-V4-Pro"


def _launch(key: str, script: str, scenario: str, conc: int, job: dict, env_in: dict,
            argv: list[str], env_added: dict, files: dict | None = None,
            helpers: list | None = None, setup: list | None = None,
            isl: int | None = None, osl: int | None = None) -> dict[str, Any]:
    return {"key": key, "master": "configs/nvidia-master.yaml", "commit": COMMIT,
            "script": script, "runner_node": "b200-nb_0", "scenario": scenario, "isl": isl,
            "osl": osl, "conc": conc, "row": {}, "job": job, "env_in": env_in,
            "server": {"argv": argv, "env_added": env_added, "env_removed": [],
                       "files": files or {}},
            "helpers": helpers or [], "setup": setup or [],
            "client": {"tool": "aiperf", "argv": ["aiperf", "profile"], "env": {}},
            "status": "ok", "reason": ""}


def _vllm_argv(port: int, conc: int, dep: bool) -> list[str]:
    seqs = 2 * conc // 8 if dep else 2 * conc
    sizes = sorted({n * 4 for n in range(1, seqs + 1)} | (set() if dep else
                                                            {100, 200, 300, 400, 500}))
    joined = ",".join(map(str, sizes))
    comp = (f'{{"cudagraph_mode":"FULL_DECODE_ONLY","cudagraph_capture_sizes":[{joined}],'
            f'"mode":0}}' if dep else
            f'{{"cudagraph_mode":"FULL_AND_PIECEWISE","cudagraph_capture_sizes":[{joined}]}}')
    argv = ["vllm", "serve", DSV4, "--served-model-name", DSV4, "--host", "0.0.0.0",
            "--port", str(port), "--trust-remote-code", "--kv-cache-dtype", "fp8",
            "--block-size", "256", "--max-model-len", "1048576", "--gpu-memory-utilization",
            "0.90", "--numa-bind", "--enable-cumem-allocator", "--no-enable-flashinfer-autotune",
            "--tokenizer-mode", "deepseek_v4", "--tool-call-parser", "deepseek_v4",
            "--enable-auto-tool-choice", "--reasoning-parser", "deepseek_v4",
            "--attention-config", '{"backend":"FLASHINFER_MLA_SPARSE_DSV4",'
            '"use_prefill_query_quantization":true,"use_fp4_indexer_cache":true}',
            "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 3, '
            '"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.49}',
            "--no-disable-hybrid-kv-cache-manager", "--disable-uvicorn-access-log",
            "--compilation-config", comp, "--max-num-seqs", str(seqs)]
    if not dep:
        return [*argv, "--tensor-parallel-size", "8", "--data-parallel-size", "1"]
    offload = ('{\n  "kv_connector": "SimpleCPUOffloadConnector",\n  "kv_role": "kv_both",\n'
               '  "kv_connector_extra_config": {\n    "cpu_bytes_to_use_per_rank": '
               '200000000000,\n    "enable_cross_layers_blocks": "true",\n'
               '    "lazy_offload": false\n  }\n}')
    return [*argv, "--tensor-parallel-size", "1", "--data-parallel-size", "8",
            "--enable-expert-parallel", "--enable-ep-weight-filter", "--moe-backend",
            "deep_gemm_amxf4_mega_moe", "--prefill-schedule-interval", "8",
            "--long-prefill-token-threshold", "512", "--max-num-batched-tokens", "8192",
            "--kv-transfer-config", offload]


def vllm_agentic() -> tuple[dict, list[dict]]:
    key, script = "dsv4-fp4-b200-vllm-agentic-mtp", \
        "benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh"
    entry = {"image": "vllm/vllm-openai:v0.30.0", "model": DSV4, "model-prefix": "dsv4",
             "runner": "b200", "precision": "fp4", "framework": "vllm", "multinode": False}
    base_env = {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_USE_V2_MODEL_RUNNER": "1",
                "TORCH_CUDA_ARCH_LIST": "10.0", "PYTHONNOUSERSITE": "1",
                "VLLM_FLOAT32_MATMUL_PRECISION": "high"}
    out = []
    for conc in (1, 4):
        job = {"tp": 8, "ep": 1, "dp-attn": False, "spec-decoding": "mtp",
               "kv-offloading": "none", "total-cpu-dram-gb": 1600}
        env_in = {"MODEL": DSV4, "PORT": "8888", "TP": "8", "EP_SIZE": "1", "CONC": str(conc),
                  "DP_ATTENTION": "false"}
        out.append(_launch(key, script, "agentic-coding", conc, job, env_in,
                           _vllm_argv(8888, conc, False),
                           {**base_env, "AIPERF_SERVER_METRICS_URLS":
                            "http://localhost:8888/metrics"}))
    router = ["vllm-router", "--worker-urls", "http://localhost:8889", "--policy",
              "consistent_hash", "--intra-node-data-parallel-size", "8", "--host", "0.0.0.0",
              "--port", "8888", "--prometheus-host", "127.0.0.1", "--prometheus-port",
              "18888", "--request-timeout-secs", "14400", "--disable-retries"]
    job = {"tp": 8, "ep": 8, "dp-attn": True, "spec-decoding": "mtp", "kv-offloading": "dram",
           "kv-offload-backend": {"name": "vllm-simple"}, "total-cpu-dram-gb": 1600}
    env_in = {"MODEL": DSV4, "PORT": "8888", "TP": "8", "EP_SIZE": "8", "CONC": "32",
              "DP_ATTENTION": "true", "KV_OFFLOAD_BACKEND": "vllm-simple"}
    out.append(_launch(key, script, "agentic-coding", 32, job, env_in,
                       _vllm_argv(8889, 32, True),
                       {**base_env, "PYTHONHASHSEED": "42",
                        "PYTORCH_ALLOC_CONF": "expandable_segments:True",
                        "AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID": "1",
                        "AIPERF_SERVER_METRICS_URLS": "http://localhost:8889/metrics"},
                       helpers=[{"name": "vllm-router", "argv": router, "env": {}}],
                       setup=[{"kind": "install", "argv": ["pip", "install", "--quiet",
                                                           "vllm-router==0.1.14"]}]))
    return entry, out


def sglang_fixed() -> tuple[dict, list[dict]]:
    key, script = "dsr1-fp8-h200-sglang", \
        "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200.sh"
    entry = {"image": "lmsysorg/sglang:v0.5.12-cu130", "model": "deepseek-ai/DeepSeek-R1-0528",
             "model-prefix": "dsr1", "runner": "h200", "precision": "fp8",
             "framework": "sglang", "multinode": False}
    setup = [{"kind": "install", "argv": ["pip", "install", "-q", "sglang-router==0.3.2"]},
             {"kind": "patch", "argv": ["sed", "-i", "s/timeout=300/timeout=3600/",
                                        "/sgl-workspace/sglang/python/sglang/srt/utils.py"]}]
    out = []
    for conc in (4, 8):
        argv = ["python3", "-m", "sglang.launch_server", "--model-path",
                "deepseek-ai/DeepSeek-R1-0528", "--host", "0.0.0.0", "--port", "8888",
                "--trust-remote-code", "--tensor-parallel-size", "8", "--disable-radix-cache",
                "--max-running-requests", "256", "--cuda-graph-max-bs", "256",
                "--chunked-prefill-size", "32768", "--max-prefill-tokens", "32768",
                "--mem-fraction-static", "0.82", "--attention-backend", "flashinfer",
                "--stream-interval", "10", "--decode-log-interval", "1",
                "--context-length", "9416"]
        env_in = {"MODEL": "deepseek-ai/DeepSeek-R1-0528", "PORT": "8888", "TP": "8",
                  "EP_SIZE": "1", "CONC": str(conc), "DP_ATTENTION": "false",
                  "MAX_MODEL_LEN": "9416"}
        job = {"tp": 8, "ep": 1, "dp-attn": False, "spec-decoding": "none"}
        out.append(_launch(key, script, "fixed-seq-len", conc, job, env_in, argv,
                           {"TORCH_CUDA_ARCH_LIST": "9.0", "PYTHONNOUSERSITE": "1"},
                           setup=setup, isl=8192, osl=1024))
    return entry, out


def trt_fixed() -> tuple[dict, list[dict]]:
    key, script = "dsr1-fp4-b200-trt", "benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200_trt.sh"
    entry = {"image": "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14",
             "model": "nvidia/DeepSeek-R1-0528-FP4-V2", "model-prefix": "dsr1",
             "runner": "b200", "precision": "fp4", "framework": "trt", "multinode": False}
    out = []
    for conc in (4, 8):
        yml = ("cuda_graph_config:\n  enable_padding: true\n  max_batch_size: "
               f"{conc}\nkv_cache_config:\n  dtype: fp8\n  free_gpu_memory_fraction: 0.8\n"
               "  enable_block_reuse: false\nprint_iter_log: true\nstream_interval: 10\n"
               "moe_config:\n  backend: TRTLLM\n")
        argv = ["mpirun", "-n", "1", "--oversubscribe", "--allow-run-as-root", "trtllm-serve",
                "nvidia/DeepSeek-R1-0528-FP4-V2", "--port=8888", "--trust_remote_code",
                "--backend=pytorch", "--max_seq_len=9416", "--tp_size=4", "--ep_size=1",
                "--max_num_tokens=8192", "--extra_llm_api_options",
                "/workspace/dsr1-fp4.yml"]
        env_in = {"MODEL": "nvidia/DeepSeek-R1-0528-FP4-V2", "PORT": "8888", "TP": "4",
                  "EP_SIZE": "1", "CONC": str(conc), "DP_ATTENTION": "false"}
        job = {"tp": 4, "ep": 1, "dp-attn": False, "spec-decoding": "none"}
        out.append(_launch(key, script, "fixed-seq-len", conc, job, env_in, argv, {},
                           files={"/workspace/dsr1-fp4.yml": yml}, isl=8192, osl=1024))
    return entry, out


FIXTURES = {"dsv4-fp4-b200-vllm-agentic-mtp": vllm_agentic, "dsr1-fp8-h200-sglang": sglang_fixed,
            "dsr1-fp4-b200-trt": trt_fixed}


def as_capture_file(key: str) -> str:
    entry, launches = FIXTURES[key]()
    return json.dumps({"key": key, "master": "configs/nvidia-master.yaml", "commit": COMMIT,
                       "kind": "agentic" if "agentic" in key else "fixed", "entry": entry,
                       "launches": launches})
