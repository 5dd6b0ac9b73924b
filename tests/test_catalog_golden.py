"""Golden catalog: every InferenceX single-node DeepSeek-R1 key, and the DeepSeek-V4-Pro vLLM keys
of both masters and its H200 SGLang keys, as a named recipe, checked launch by launch against
the upstream script's server command (docs/upstream/inferencex.md §1, §2).

For each key: the recipes' launches cover exactly the catalog's (topology, concurrency) points
(conc-start..conc-end doubling, the last clamped, §1.4); each launch's argv is the script's
command for that TP/EP/DP/CONC flag for flag (options compared as a set of flag groups, since a
row's CONC- or branch-dependent flags follow the template's; the program and its positional
arguments in order), its environment is the script's exported one, and for TensorRT-LLM the
extra-options YAML is the script's heredoc plus the harness's metrics keys. The expected
commands below are written from the script text, path@commit on each function
(under SemiAnalysisAI/InferenceX benchmarks/single_node/); MODEL, TP,
EP_SIZE, CONC substituted, PORT 8888, host 127.0.0.1 (upstream binds 0.0.0.0). No engine runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config.compose import compose_sweep
from harness.config.launches import launches
from harness.engines.registry import make_adapter
from harness.engines.trtllm import EXTRA_OPTIONS_FILE, METRICS_OPTIONS
from harness.spec.acceptance import AcceptancePlan

RECIPES = Path(__file__).resolve().parents[1] / "recipes" / "recipe"
H, PORT = "127.0.0.1", "8888"
ISL, OSL = 8192, 1024
MAX_MODEL_LEN = ISL + OSL + 200  # the matrix generator's max-model-len
FP4 = "nvidia/DeepSeek-R1-0528-FP4-V2"
FP8 = "deepseek-ai/DeepSeek-R1-0528"
MXFP4 = "amd/DeepSeek-R1-0528-MXFP4"
MXFP4_PREVIEW = "amd/DeepSeek-R1-0528-MXFP4-Preview"
NV = "nvidia-master.yaml@11776f53"
AMD = "amd-master.yaml@7efe2986"


@dataclass
class Cmd:
    argv: list[str]
    env: dict[str, str]
    yaml: dict[str, Any] | None = None
    prefix: int = 3  # leading arguments compared in order (program, module, positionals)


def sri(conc: int) -> str:
    """--scheduler-recv-interval: `if [[ $CONC -ge 16 ]]; then 30 else 10`."""
    return "30" if conc >= 16 else "10"


def ceil64(x: int) -> int:
    return (x + 63) // 64 * 64


SGLANG = ["python3", "-m", "sglang.launch_server"]


# ---------------------------------------------------------------- NVIDIA SGLang

def dsr1_fp4_b200(tp: int, ep: int, dp: bool, conc: int, mtp: bool = False) -> Cmd:
    # fixed_seq_len/dsr1_fp4_b200.sh@25cbe715460cfb47e8842df30dcb35ece5d33b9d
    # fixed_seq_len/dsr1_fp4_b200_mtp.sh@25cbe715460cfb47e8842df30dcb35ece5d33b9d
    recv, chunk = sri(conc), "16384"
    parallel = [f"--tensor-parallel-size={tp}", "--data-parallel-size=1"]
    dpa: list[str] = []
    if dp:
        recv, chunk = "1", "32768"
        parallel = [f"--tensor-parallel-size={tp}", f"--data-parallel-size={tp}",
                    "--enable-dp-attention", "--enable-dp-attention-local-control-broadcast",
                    "--enable-dp-lm-head"]
        dpa = ["--schedule-conservativeness", "3.33", "--enable-prefill-delayer"]
    argv = [*SGLANG, "--model-path", FP4, "--host", H, "--port", PORT, "--trust-remote-code",
            *parallel,
            "--cuda-graph-max-bs", "256", "--max-running-requests", "256",
            "--mem-fraction-static", "0.85", "--kv-cache-dtype", "fp8_e4m3",
            "--chunked-prefill-size", chunk,
            "--ep-size", str(ep), "--quantization", "modelopt_fp4",
            "--enable-flashinfer-allreduce-fusion", "--scheduler-recv-interval", recv]
    if not mtp:
        argv += ["--enable-symm-mem"]
    argv += ["--disable-piecewise-cuda-graph", "--attention-backend", "trtllm_mla",
             "--moe-runner-backend", "flashinfer_trtllm", "--stream-interval", "10"]
    if mtp:
        argv += ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "2",
                 "--speculative-num-draft-tokens", "3", "--speculative-eagle-topk", "1"]
    env = {"SGLANG_RADIX_FORCE_MISS": "1", "PYTHONNOUSERSITE": "1"}
    if mtp:
        env["SGLANG_ENABLE_SPEC_V2"] = "1"  # export SGLANG_ENABLE_SPEC_V2=1
    return Cmd([*argv, *dpa], env)


def dsr1_fp4_b200_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    return dsr1_fp4_b200(tp, ep, dp, conc, mtp=True)


def dsr1_fp4_b300(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp4_b300.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    argv = [*SGLANG, "--model-path", FP4, "--host", H, "--port", PORT, "--trust-remote-code",
            f"--tensor-parallel-size={tp}", "--data-parallel-size=1",
            "--cuda-graph-max-bs", "256", "--max-running-requests", "256",
            "--mem-fraction-static", "0.85", "--kv-cache-dtype", "fp8_e4m3",
            "--chunked-prefill-size", "16384",
            "--ep-size", str(ep), "--quantization", "modelopt_fp4",
            "--enable-flashinfer-allreduce-fusion", "--scheduler-recv-interval", sri(conc),
            "--enable-symm-mem", "--disable-radix-cache", "--attention-backend", "trtllm_mla",
            "--moe-runner-backend", "flashinfer_trtllm", "--stream-interval", "10"]
    return Cmd(argv, {"PYTHONNOUSERSITE": "1"})


def _dsr1_fp8_b_sglang(tp: int, ep: int, conc: int, cgbs_flag: str) -> Cmd:
    if tp == 8:
        recv, mrr, cgbs, mfs, cps, mpt = sri(conc), "128", "128", "0.82", "32768", "32768"
    else:  # TP 4 (8k1k only)
        recv, mrr, cgbs, mfs, cps, mpt = "10", "32", "32", "0.95", "8192", "8192"
    argv = [*SGLANG, f"--model-path={FP8}", f"--host={H}", f"--port={PORT}",
            f"--tensor-parallel-size={tp}", "--data-parallel-size=1",
            cgbs_flag, cgbs, "--max-running-requests", mrr,
            "--mem-fraction-static", mfs, "--kv-cache-dtype", "fp8_e4m3",
            "--chunked-prefill-size", cps, "--max-prefill-tokens", mpt,
            "--enable-flashinfer-allreduce-fusion", "--scheduler-recv-interval", recv,
            "--disable-radix-cache",
            "--attention-backend", "trtllm_mla", "--stream-interval", "30", "--ep-size", str(ep),
            "--moe-runner-backend", "flashinfer_trtllm", "--quantization", "fp8"]
    env = {"SGL_ENABLE_JIT_DEEPGEMM": "false", "SGLANG_ENABLE_FLASHINFER_GEMM": "true",
           "PYTHONNOUSERSITE": "1"}
    return Cmd(argv, env)


def dsr1_fp8_b200(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_b200.sh@432945d2ee14f0a9c1e6cd8b7cadf53039dff421
    return _dsr1_fp8_b_sglang(tp, ep, conc, "--cuda-graph-max-bs-decode")


def dsr1_fp8_b300(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_b300.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    return _dsr1_fp8_b_sglang(tp, ep, conc, "--cuda-graph-max-bs")


def dsr1_fp8_b200_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_b200_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    # fixed_seq_len/dsr1_fp8_b300_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    # (same command). SGLANG_ENABLE_SPEC_V2=1 is set without export: not in the server's env.
    argv = [*SGLANG, f"--model-path={FP8}", f"--host={H}", f"--port={PORT}",
            f"--tensor-parallel-size={tp}", "--data-parallel-size=1",
            "--cuda-graph-max-bs", "512", "--max-running-requests", "512",
            "--mem-fraction-static", "0.82", "--kv-cache-dtype", "fp8_e4m3",
            "--chunked-prefill-size", "16384", "--max-prefill-tokens", "16384",
            "--enable-flashinfer-allreduce-fusion", "--scheduler-recv-interval", sri(conc),
            "--disable-radix-cache", "--fp8-gemm-backend=flashinfer_trtllm",
            "--attention-backend", "trtllm_mla", "--stream-interval", "30", "--ep-size", str(ep),
            "--moe-runner-backend", "flashinfer_trtllm", "--quantization", "fp8",
            "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "2",
            "--speculative-num-draft-tokens", "3", "--speculative-eagle-topk", "1"]
    return Cmd(argv, {"SGLANG_ENABLE_JIT_DEEPGEMM": "false", "PYTHONNOUSERSITE": "1"})


def dsr1_fp8_h200(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_h200.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    # (the non-1k1k branch)
    argv = [*SGLANG, "--model-path", FP8, "--host", H, "--port", PORT, "--trust-remote-code",
            f"--tensor-parallel-size={tp}", "--data-parallel-size=1",
            "--disable-radix-cache", "--max-running-requests", "256", "--cuda-graph-max-bs", "256",
            "--chunked-prefill-size", "32768", "--max-prefill-tokens", "32768",
            "--mem-fraction-static", "0.82",
            "--attention-backend", "flashinfer", "--stream-interval", "10",
            "--decode-log-interval", "1"]
    return Cmd(argv, {"TORCH_CUDA_ARCH_LIST": "9.0", "PYTHONNOUSERSITE": "1"})


def dsr1_fp8_h200_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_h200_mtp.sh@bdf931e38c6bd38ec5a51bc2a7d113d03fee78ad
    argv = [*SGLANG, "--model-path", FP8, "--host", H, "--port", PORT, "--trust-remote-code",
            f"--tensor-parallel-size={tp}", "--data-parallel-size=1",
            "--ep-size", str(ep),
            "--disable-radix-cache",
            "--max-running-requests", "256",
            "--cuda-graph-max-bs-decode", "256",
            "--chunked-prefill-size", "32768", "--max-prefill-tokens", "32768",
            "--mem-fraction-static", "0.82",
            "--attention-backend", "flashinfer", "--stream-interval", "10",
            "--decode-log-interval", "1",
            "--speculative-algorithm", "EAGLE",
            "--speculative-num-steps", "2",
            "--speculative-num-draft-tokens", "3",
            "--speculative-eagle-topk", "1"]
    return Cmd(argv, {"SGLANG_ENABLE_SPEC_V2": "1", "TORCH_CUDA_ARCH_LIST": "9.0",
                      "PYTHONNOUSERSITE": "1"})


# ---------------------------------------------------------------- NVIDIA TensorRT-LLM

def trtllm_serve(model: str, tp: int, ep: int, max_num_tokens: int,
                 max_batch_size: int | None = None) -> list[str]:
    """mpirun -n 1 --oversubscribe --allow-run-as-root trtllm-serve $MODEL --port=$PORT
    --trust_remote_code --backend=pytorch [--max_batch_size=$MAX_BATCH_SIZE]
    --max_seq_len=$MAX_MODEL_LEN --max_num_tokens=$MAX_NUM_TOKENS --tp_size=$TP
    --ep_size=$EP_SIZE --extra_llm_api_options=$EXTRA_CONFIG_FILE"""
    argv = ["mpirun", "-n", "1", "--oversubscribe", "--allow-run-as-root",
            "trtllm-serve", model, f"--port={PORT}", "--trust_remote_code", "--backend=pytorch"]
    if max_batch_size is not None:
        argv.append(f"--max_batch_size={max_batch_size}")
    # MAX_MODEL_LEN = max(MAX_MODEL_LEN, 8192) (non-MTP scripts); 9416 either way at 8k/1k
    return [*argv, f"--max_seq_len={max(MAX_MODEL_LEN, 8192)}",
            f"--max_num_tokens={max_num_tokens}", f"--tp_size={tp}", f"--ep_size={ep}",
            f"--extra_llm_api_options={EXTRA_OPTIONS_FILE}"]


def trt_yaml(cuda_graph_bs: int, dp: bool, kv_fraction: float, moe: str,
             mtp: int | None = None) -> dict[str, Any]:
    """The scripts' `cat > $EXTRA_CONFIG_FILE << EOF` heredoc (and its DP append)."""
    y: dict[str, Any] = {
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": cuda_graph_bs},
        "enable_attention_dp": dp, "print_iter_log": True,
        "kv_cache_config": {"dtype": "fp8", "free_gpu_memory_fraction": kv_fraction,
                            "enable_block_reuse": False},
        "stream_interval": 10, "moe_config": {"backend": moe}}
    if mtp is not None:
        y["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": mtp}
    if dp:
        y["attention_dp_config"] = {"batching_wait_iters": 0, "enable_balance": True,
                                    "timeout_iters": 60}
    return y


def piecewise(max_num_tokens: int) -> dict[str, Any]:
    """capture_tokens=(1 2 4 8 16 32 64 128) + $(seq 256 256 $MAX_NUM_TOKENS) [+ MAX_NUM_TOKENS
    when not a multiple of 256]."""
    tokens = [1, 2, 4, 8, 16, 32, 64, 128, *range(256, max_num_tokens + 1, 256)]
    if max_num_tokens % 256:
        tokens.append(max_num_tokens)
    return {"capture_num_tokens": tokens, "enable_piecewise_cuda_graph": True}


def plain_max_num_tokens(conc: int) -> int:
    """MAX_NUM_TOKENS=$(( ($CONC+$ISL+64+63)/64*64 )), then at least 8192."""
    return max(ceil64(conc + ISL + 64), 8192)


def dsr1_fp4_b200_trt(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp4_b200_trt.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    bs, moe = conc, "TRTLLM"
    if dp:
        bs, moe = (conc if conc < 4 else conc // 4), "CUTLASS"
    return Cmd(trtllm_serve(FP4, tp, ep, plain_max_num_tokens(conc)), {},
               trt_yaml(bs, dp, 0.8, moe), prefix=7)


def dsr1_fp4_b200_trt_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp4_b200_trt_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    moe, mbs, mtp = "TRTLLM", conc, 3
    if dp:
        mbs, moe, mtp = (conc if conc < 4 else conc // 4), "CUTLASS", 1
    mnt = ceil64((mtp + 1) * mbs + ISL + 64)
    return Cmd(trtllm_serve(FP4, tp, ep, mnt, mbs), {}, trt_yaml(mbs, dp, 0.8, moe, mtp),
               prefix=7)


def dsr1_fp8_b200_trt(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_b200_trt.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    kv = 0.75 if tp == 4 else 0.8  # 8k1k: TP4 uses 0.75
    mnt = plain_max_num_tokens(conc)
    y = trt_yaml(conc, dp, kv, "TRTLLM")
    if conc >= 64:  # 8k1k: PIECEWISE_CUDA_GRAPHS for CONC >= 64
        y["torch_compile_config"] = piecewise(mnt)
    return Cmd(trtllm_serve(FP8, tp, ep, mnt), {"TLLM_OVERRIDE_LAYER_NUM": "61"}, y, prefix=7)


def dsr1_fp8_b200_trt_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_b200_trt_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    # (the catalog has no DP row for this key; the script's DP branch is not exercised)
    mbs, mtp = conc, 3
    mnt = ceil64((mtp + 1) * mbs + ISL + 64)
    y = trt_yaml(mbs, dp, 0.8, "TRTLLM", mtp)
    if conc > 16:  # 8k1k: no piecewise CUDA graphs for CONC <= 16
        y["torch_compile_config"] = piecewise(mnt)
    return Cmd(trtllm_serve(FP8, tp, ep, mnt, mbs), {}, y, prefix=7)


def dsr1_fp8_h200_trt(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_h200_trt.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    return Cmd(trtllm_serve(FP8, tp, ep, plain_max_num_tokens(conc)),
               {"PYTHONNOUSERSITE": "1"}, trt_yaml(128, dp, 0.75, "CUTLASS"), prefix=7)


def dsr1_fp8_h200_trt_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_h200_trt_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    mtp = 1 if dp else 3
    env = {"PYTHONNOUSERSITE": "1"}
    if dp:  # ISL == 8192 and DP_ATTENTION
        env["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:8192"
    mbs = max(1, conc // tp) if dp else conc
    mnt = ceil64((mtp + 1) * mbs + ISL + 64)
    return Cmd(trtllm_serve(FP8, tp, ep, mnt, mbs), env, trt_yaml(128, dp, 0.75, "CUTLASS", mtp),
               prefix=7)


# ---------------------------------------------------------------- AMD SGLang

def _dsr1_fp4_mi355x(tp: int, ep: int, conc: int, mtp: bool) -> Cmd:
    prefill = "32768" if conc > 32 else "196608"  # 8k1k: CONC > 32
    argv = [*SGLANG, f"--model-path={MXFP4 if mtp else MXFP4_PREVIEW}", "--trust-remote-code",
            f"--host={H}", f"--port={PORT}", f"--tensor-parallel-size={tp}"]
    if mtp:
        argv += ["--ep-size", str(ep)]
    argv += [f"--chunked-prefill-size={prefill}", "--mem-fraction-static=0.8",
             "--disable-radix-cache", "--num-continuous-decode-steps=4",
             f"--max-prefill-tokens={prefill}", "--cuda-graph-max-bs=128",
             "--attention-backend", "aiter", "--kv-cache-dtype", "fp8_e4m3"]
    env = {"SGLANG_USE_AITER": "1", "ROCM_QUICK_REDUCE_QUANTIZATION": "INT4"}
    if mtp:
        argv += ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
                 "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
        env.update({"SGLANG_AITER_MLA_PERSIST": "1", "SGLANG_ENABLE_SPEC_V2": "1"})
    return Cmd(argv, env)


def dsr1_fp4_mi355x(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp4_mi355x.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    return _dsr1_fp4_mi355x(tp, ep, conc, mtp=False)


def dsr1_fp4_mi355x_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp4_mi355x_mtp.sh@f89cdfe2904ddb3cc8ef2405074374d2fee8020b
    return _dsr1_fp4_mi355x(tp, ep, conc, mtp=True)


def _dsr1_fp8_mi30x(tp: int, cgbs_flag: str) -> Cmd:
    argv = [*SGLANG, f"--model-path={FP8}", f"--host={H}", f"--port={PORT}", "--trust-remote-code",
            f"--tensor-parallel-size={tp}", "--mem-fraction-static=0.8", f"{cgbs_flag}=128",
            "--chunked-prefill-size=131072", "--num-continuous-decode-steps=4",
            "--max-prefill-tokens=131072", "--kv-cache-dtype", "fp8_e4m3",
            "--attention-backend", "aiter", "--disable-radix-cache"]
    return Cmd(argv, {"SGLANG_USE_AITER": "1", "SGLANG_AITER_MLA_PERSIST": "1"})


def dsr1_fp8_mi300x(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_mi300x.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    # (HSA_NO_SCRATCH_RECLAIM=1 only on MEC firmware < 177: machine-dependent, not expected)
    return _dsr1_fp8_mi30x(tp, "--cuda-graph-max-bs")


def dsr1_fp8_mi325x(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_mi325x.sh@0762e65d6101bd1551c3eee72dfb4913d1f8cd7d
    return _dsr1_fp8_mi30x(tp, "--cuda-graph-max-bs-decode")


def dsr1_fp8_mi355x(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_mi355x.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    argv = [*SGLANG, "--attention-backend", "aiter", "--model-path", FP8, f"--host={H}",
            "--port", PORT, "--tensor-parallel-size", str(tp), "--trust-remote-code",
            "--chunked-prefill-size", "196608", "--mem-fraction-static", "0.8",
            "--disable-radix-cache", "--num-continuous-decode-steps", "8",
            "--max-prefill-tokens", "196608", "--kv-cache-dtype", "fp8_e4m3",
            "--cuda-graph-max-bs", str(conc)]
    return Cmd(argv, {"SGLANG_USE_AITER": "1", "RCCL_MSCCL_ENABLE": "0",
                      "ROCM_QUICK_REDUCE_QUANTIZATION": "INT4"})


def dsr1_fp8_mi355x_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_mi355x_mtp.sh@25cbe715460cfb47e8842df30dcb35ece5d33b9d
    argv = [*SGLANG, "--attention-backend", "aiter", "--model-path", FP8, f"--host={H}",
            "--port", PORT, "--tensor-parallel-size", str(tp), "--ep-size", str(ep),
            "--trust-remote-code", "--chunked-prefill-size", "196608",
            "--mem-fraction-static", "0.8", "--disable-radix-cache",
            "--num-continuous-decode-steps", "8", "--max-prefill-tokens", "196608",
            "--kv-cache-dtype", "fp8_e4m3", "--cuda-graph-max-bs", str(conc),
            "--max-running-requests", str(conc),
            "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    return Cmd(argv, {"SGLANG_USE_AITER": "1", "SGLANG_AITER_MLA_PERSIST": "1",
                      "SGLANG_ENABLE_SPEC_V2": "1", "RCCL_MSCCL_ENABLE": "0",
                      "ROCM_QUICK_REDUCE_QUANTIZATION": "INT4"})


# ---------------------------------------------------------------- AMD ATOM

def _atom(model: str, tp: int, ep: int, tail: list[str]) -> list[str]:
    # --kv_cache_dtype fp8 $CALCULATED_MAX_MODEL_LEN $EP: " --max-model-len 10240 " unless
    # 1k1k; " --enable-expert-parallel" only when EP_SIZE > 1
    ep_args = ["--enable-expert-parallel"] if ep > 1 else []
    return ["python3", "-m", "atom.entrypoints.openai_server", "--model", model,
            "--server-port", PORT, "-tp", str(tp), "--kv_cache_dtype", "fp8",
            "--max-model-len", "10240", *ep_args, *tail]


def dsr1_fp4_mi355x_atom(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp4_mi355x_atom.sh@de75941290e17a57b8ff7eba8a268a4c3bd9ae2a
    return Cmd(_atom(MXFP4_PREVIEW, tp, ep, ["--block-size", "16"]), {"OMP_NUM_THREADS": "1"})


def dsr1_fp4_mi355x_atom_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp4_mi355x_atom_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    return Cmd(_atom(MXFP4, tp, ep, ["--method", "mtp"]),
               {"OMP_NUM_THREADS": "1", "AMDGCN_USE_BUFFER_OPS": "1"})


def dsr1_fp8_mi355x_atom(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_mi355x_atom.sh@25cbe715460cfb47e8842df30dcb35ece5d33b9d
    return Cmd(_atom(FP8, tp, ep, ["--block-size", "16"]), {"OMP_NUM_THREADS": "1"})


def dsr1_fp8_mi355x_atom_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsr1_fp8_mi355x_atom_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    # (PYTHONDONTWRITEBYTECODE is exported after the server starts: client-side only)
    return Cmd(_atom(FP8, tp, ep, ["--method", "mtp", "--num-speculative-tokens", "3"]),
               {"OMP_NUM_THREADS": "1"})


# ---------------------------------------------------------------- DeepSeek-V4-Pro, vLLM (NVIDIA)

DSV4 = "deepseek-ai/DeepSeek-V4-Pro"
VLLM_COMPILE = '{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":["all"]}'
DSV4_PARSERS = ["--tokenizer-mode", "deepseek_v4", "--tool-call-parser", "deepseek_v4",
                "--enable-auto-tool-choice", "--reasoning-parser", "deepseek_v4"]


def vllm_parallel(tp: int, dp: bool) -> list[str]:
    """PARALLEL_ARGS: (--tensor-parallel-size $TP --data-parallel-size 1), or under
    DP_ATTENTION (--tensor-parallel-size 1 --data-parallel-size $TP)."""
    if dp:
        return ["--tensor-parallel-size", "1", "--data-parallel-size", str(tp)]
    return ["--tensor-parallel-size", str(tp), "--data-parallel-size", "1"]


def dsv4_fp4_b200_vllm(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp4_b200_vllm.sh@045984b0f81ec5384987936402641cea257169ab
    ep_args = ["--enable-expert-parallel"] if ep > 1 else []
    moe = ["--moe-backend", "deep_gemm_mega_moe"] if ep > 1 else []
    eplb = (["--enable-eplb", "--eplb-config", '{"communicator":"torch_nccl", "use_async": false}']
            if dp else [])
    prefill = ["--prefill-schedule-interval", "4"] if dp else []
    mnbt = ISL if conc <= 128 else 2048  # ISL 8192 and CONC <= 128
    argv = ["vllm", "serve", DSV4, "--host", H, "--port", PORT, "--trust-remote-code",
            "--kv-cache-dtype", "fp8", "--block-size", "256", "--no-enable-prefix-caching",
            *vllm_parallel(tp, dp), *ep_args, *moe, *eplb, *prefill,
            "--compilation-config", VLLM_COMPILE, "--attention_config.use_fp4_indexer_cache=True",
            *DSV4_PARSERS, "--max-cudagraph-capture-size", "2048",
            "--max-model-len", str(MAX_MODEL_LEN), "--max-num-batched-tokens", str(mnbt)]
    return Cmd(argv, {"VLLM_ENGINE_READY_TIMEOUT_S": "3600"})


def dsv4_fp4_b200_vllm_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp4_b200_vllm_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    ep_args = ["--enable-expert-parallel"] if ep > 1 else []
    gmu = ["--gpu-memory-utilization", "0.95"] if dp else []
    moe = ["--moe-backend", "deep_gemm_mega_moe"] if dp else []
    argv = ["vllm", "serve", DSV4, "--host", H, "--port", PORT, "--trust-remote-code",
            "--kv-cache-dtype", "fp8", "--block-size", "256", "--no-enable-prefix-caching",
            *vllm_parallel(tp, dp), *ep_args, *gmu, *moe,
            "--compilation-config", VLLM_COMPILE, "--attention_config.use_fp4_indexer_cache=True",
            *DSV4_PARSERS, "--max-cudagraph-capture-size", "2048",
            "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}',
            "--max-model-len", str(MAX_MODEL_LEN), "--max-num-batched-tokens", str(ISL * 2)]
    return Cmd(argv, {"VLLM_ENGINE_READY_TIMEOUT_S": "3600"})


def _dsv4_fp4_b300_vllm(tp: int, ep: int, dp: bool, mtp: bool) -> Cmd:
    ep_args = ["--enable-expert-parallel"] if ep > 1 else []
    moe = ["--moe-backend", "deep_gemm_mega_moe"] if dp else []
    mnbt = 2048 if dp else ISL * 2
    spec = (["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}']
            if mtp else [])
    # vllm serve "$MODEL_PATH" --served-model-name "$MODEL" (MODEL_PATH = MODEL when unset)
    argv = ["vllm", "serve", DSV4, "--served-model-name", DSV4, "--host", H, "--port", PORT,
            *vllm_parallel(tp, dp), "--pipeline-parallel-size", "1", "--kv-cache-dtype", "fp8",
            "--trust-remote-code", "--block-size", "256", "--no-enable-prefix-caching",
            *ep_args, *moe, "--compilation-config", VLLM_COMPILE,
            "--attention_config.use_fp4_indexer_cache", "True", *DSV4_PARSERS,
            "--max-cudagraph-capture-size", "2048", *spec,
            "--max-model-len", str(MAX_MODEL_LEN), "--max-num-batched-tokens", str(mnbt)]
    env = {"VLLM_ENGINE_READY_TIMEOUT_S": "3600"}
    if mtp:
        env["SPEEDBENCH_NUM_SPEC_TOKENS"] = "2"
    return Cmd(argv, env)


def dsv4_fp4_b300_vllm(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp4_b300_vllm.sh@2a3fa86b09f2916943a7d3913c483d4e8612f5af
    # (PROFILE_VLLM_ARGS empty: no profiling)
    return _dsv4_fp4_b300_vllm(tp, ep, dp, mtp=False)


def dsv4_fp4_b300_vllm_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp4_b300_vllm_mtp.sh@886c43ae9a5434811c1b3d6e384b45e76640ff4c
    return _dsv4_fp4_b300_vllm(tp, ep, dp, mtp=True)


def _dsv4_fp8_h200(tp: int, ep: int, dp: bool, mtp: bool) -> Cmd:
    ep_args = ["--enable-expert-parallel"] if ep > 1 else []
    spec = (["--speculative-config", '{"method":"mtp","num_speculative_tokens":2}']
            if mtp else [])
    # MAX_MODEL_LEN_ARG: "--max-model-len 800000" (plain), "--max-model-len $MAX_MODEL_LEN" (MTP)
    argv = ["vllm", "serve", DSV4, "--host", H, "--port", PORT, "--trust-remote-code",
            "--kv-cache-dtype", "fp8", "--block-size", "256", "--no-enable-prefix-caching",
            *vllm_parallel(tp, dp), *ep_args,
            "--max-model-len", str(MAX_MODEL_LEN) if mtp else "800000",
            "--gpu-memory-utilization", "0.95", "--max-num-seqs", "512",
            "--max-num-batched-tokens", "512", "--no-enable-flashinfer-autotune",
            "--compilation-config", '{"mode":0,"cudagraph_mode":"FULL_DECODE_ONLY"}', *spec,
            *DSV4_PARSERS]
    env = {"VLLM_ENGINE_READY_TIMEOUT_S": "3600"}
    if mtp:
        env["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] = "0"
    return Cmd(argv, env)


def dsv4_fp8_h200(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp8_h200.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2 (legacy name:
    # no dsv4_fp8_h200_vllm.sh, so the launcher runs this vLLM script)
    return _dsv4_fp8_h200(tp, ep, dp, mtp=False)


def dsv4_fp8_h200_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp8_h200_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    return _dsv4_fp8_h200(tp, ep, dp, mtp=True)


# ---------------------------------------------------------------- DeepSeek-V4-Pro, vLLM (AMD)

ROCM_COMPILE = '{"mode":3,"cudagraph_mode":"FULL_AND_PIECEWISE"}'


def _dsv4_fp4_mi355x_vllm(tp: int, ep: int, dp: bool, mtp: bool) -> Cmd:
    ep_args = ["--enable-expert-parallel"] if ep > 1 else []
    moe = ["--moe-backend", "aiter"] if mtp else []  # MOE_BACKEND default aiter (MTP script)
    spec = (["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}']
            if mtp else [])
    argv = ["vllm", "serve", DSV4, "--port", PORT, *vllm_parallel(tp, dp), *ep_args,
            "--async-scheduling", "--no-enable-prefix-caching",
            "--distributed-executor-backend", "mp", "--gpu-memory-utilization", "0.8",
            "--kv-cache-dtype", "fp8", "--trust-remote-code", *moe,
            "--tokenizer-mode", "deepseek_v4", "--reasoning-parser", "deepseek_v4", *spec,
            "--compilation-config", ROCM_COMPILE]
    env = ({"VLLM_ROCM_USE_AITER": "1", "VLLM_ROCM_USE_AITER_MOE": "1"} if mtp else
           {"VLLM_ROCM_USE_AITER": "1", "ATOM_MOE_GU_ITLV": "1", "AITER_BF16_FP8_MOE_BOUND": "0"})
    return Cmd(argv, env)  # HIP_VISIBLE_DEVICES only mirrors a set ROCR_VISIBLE_DEVICES


def dsv4_fp4_mi355x_vllm(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp4_mi355x_vllm.sh@0d704f548501f7393dfb20237d00f3d0370606e1
    return _dsv4_fp4_mi355x_vllm(tp, ep, dp, mtp=False)


def dsv4_fp4_mi355x_vllm_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp4_mi355x_vllm_mtp.sh@323ef3ba31494c1d59bfe44109c18db21e272a59
    return _dsv4_fp4_mi355x_vllm(tp, ep, dp, mtp=True)


def _dsv4_fp8_gfx942_vllm(tp: int, ep: int, dp: bool, mtp: bool) -> Cmd:
    ep_args = ["--enable-expert-parallel"] if ep > 1 else []
    spec = (["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}']
            if mtp else [])
    argv = ["vllm", "serve", DSV4, "--port", PORT, *vllm_parallel(tp, dp), *ep_args,
            "--quantization", "deepseek_v4_fp8", "--async-scheduling",
            "--no-enable-prefix-caching", "--distributed-executor-backend", "mp",
            "--gpu-memory-utilization", "0.9", "--max-model-len", str(MAX_MODEL_LEN),
            "--kv-cache-dtype", "fp8", "--trust-remote-code",
            "--tokenizer-mode", "deepseek_v4", "--reasoning-parser", "deepseek_v4", *spec,
            "--compilation-config", ROCM_COMPILE]
    return Cmd(argv, {"VLLM_ROCM_USE_AITER": "1", "VLLM_ROCM_USE_AITER_MOE": "1"})


def dsv4_fp8_mi300x(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp8_mi300x.sh@3f58f40800f3212f54f09277c7af5ec29713fae4 (vLLM)
    return _dsv4_fp8_gfx942_vllm(tp, ep, dp, mtp=False)


def dsv4_fp8_mi325x_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp8_mi325x_mtp.sh@56767f1fd8cf0ff3708641e95f246c55239606b7
    return _dsv4_fp8_gfx942_vllm(tp, ep, dp, mtp=True)


# ---------------------------------------------------------------- DeepSeek-V4-Pro, SGLang (H200)

def _dsv4_fp8_h200_sglang(tp: int, conc: int, mtp: bool) -> Cmd:
    argv = ["sglang", "serve", "--model-path", DSV4, "--host", H, "--port", PORT,
            "--trust-remote-code", "--tp", str(tp), "--moe-runner-backend", "marlin",
            "--chunked-prefill-size", "4096", "--disable-flashinfer-autotune",
            "--disable-radix-cache", "--mem-fraction-static", "0.88",
            "--max-running-requests", str(max(conc * 3 // 2, 8))]
    if mtp:
        argv += ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
                 "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    return Cmd(argv, {"PYTHONNOUSERSITE": "1"}, prefix=2)


def dsv4_fp8_h200_sglang(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp8_h200_sglang.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    return _dsv4_fp8_h200_sglang(tp, conc, mtp=False)


def dsv4_fp8_h200_sglang_mtp(tp: int, ep: int, dp: bool, conc: int) -> Cmd:
    # fixed_seq_len/dsv4_fp8_h200_sglang_mtp.sh@8eec0d4ed58b1a7ab659bc8b4038ffddf3452ea2
    return _dsv4_fp8_h200_sglang(tp, conc, mtp=True)


# ---------------------------------------------------------------- the catalog

Row = tuple[int, int, bool, int, int]  # tp, ep, dp-attn, conc-start, conc-end


@dataclass
class Key:
    catalog: str
    image: str
    rows: list[Row]
    script: Any  # (tp, ep, dp, conc) -> Cmd; None: flags not transcribed
    recipes: list[str] = field(default_factory=list)  # default: [key]
    # TensorRT-LLM YAML paths that differ from the script's for some launches: extra_options is
    # one per recipe (SearchRow has no extra_options); recipes/recipe/README.md
    yaml_gaps: frozenset[str] = frozenset()


TRT = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14"  # the catalog's nvcr.io#... in docker form
SGL_POST1, SGL_CU130 = "lmsysorg/sglang:v0.5.12.post1", "lmsysorg/sglang:v0.5.12-cu130"
SGL_MI35X = "lmsysorg/sglang:v0.5.12-rocm700-mi35x"
SGL_MI30X = "lmsysorg/sglang:v0.5.12-rocm700-mi30x"
ATOM_0511 = "rocm/atom:rocm7.2.3_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260511"
ATOM_013 = "rocm/atom:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom0.1.3"
CG_BS = "cuda_graph_config.max_batch_size"
# the catalog pins a digest (sha256:1bf5d508..., not re-read); the recipe has the tag
DSV4_HOPPER = "lmsysorg/sglang:deepseek-v4-hopper"
ROCM_VLLM = "vllm/vllm-openai-rocm:nightly-09663abde0f50944a8d5ea30120666024b503faa"

CATALOG: dict[str, Key] = {
    # configs/nvidia-master.yaml@11776f53c960b412276388f4d785f7d0383c7ec2
    "dsr1-fp4-b200-sglang": Key(NV, SGL_POST1, [(4, 1, False, 1, 32), (4, 4, True, 64, 256)],
                                dsr1_fp4_b200),
    "dsr1-fp4-b200-sglang-mtp": Key(NV, SGL_POST1, [(4, 1, False, 1, 32), (4, 4, True, 64, 256)],
                                    dsr1_fp4_b200_mtp),
    "dsr1-fp4-b300-sglang": Key(NV, SGL_CU130, [(4, 4, False, 1, 128), (8, 8, False, 1, 16)],
                                dsr1_fp4_b300),
    "dsr1-fp4-b200-trt": Key(NV, TRT, [(4, 1, False, 4, 32), (4, 4, False, 32, 32),
                                       (4, 4, True, 256, 256), (8, 1, False, 4, 4),
                                       (8, 8, True, 128, 256)], dsr1_fp4_b200_trt,
                             ["dsr1-fp4-b200-trt", "dsr1-fp4-b200-trt-dpa"], frozenset({CG_BS})),
    "dsr1-fp4-b200-trt-mtp": Key(NV, TRT, [(4, 1, False, 4, 16), (4, 4, False, 32, 32),
                                           (4, 4, True, 256, 256), (8, 1, False, 4, 4),
                                           (8, 8, True, 64, 256)], dsr1_fp4_b200_trt_mtp,
                                 ["dsr1-fp4-b200-trt-mtp", "dsr1-fp4-b200-trt-mtp-dpa"],
                                 frozenset({CG_BS})),
    "dsr1-fp8-b200-sglang": Key(NV, SGL_CU130, [(8, 1, False, 1, 4), (4, 1, False, 1, 32)],
                                dsr1_fp8_b200),
    "dsr1-fp8-b300-sglang": Key(NV, SGL_CU130, [(8, 1, False, 1, 4), (4, 1, False, 1, 32)],
                                dsr1_fp8_b300),
    "dsr1-fp8-b200-sglang-mtp": Key(NV, SGL_CU130, [(8, 1, False, 1, 512)], dsr1_fp8_b200_mtp),
    "dsr1-fp8-b300-sglang-mtp": Key(NV, SGL_CU130, [(8, 1, False, 1, 512)], dsr1_fp8_b200_mtp),
    "dsr1-fp8-b200-trt": Key(NV, TRT, [(8, 1, False, 64, 256), (4, 1, False, 8, 32),
                                       (8, 1, False, 4, 8)], dsr1_fp8_b200_trt,
                             yaml_gaps=frozenset({CG_BS, "torch_compile_config",
                                                  "kv_cache_config.free_gpu_memory_fraction"})),
    "dsr1-fp8-b200-trt-mtp": Key(NV, TRT, [(8, 1, False, 4, 256)], dsr1_fp8_b200_trt_mtp,
                                 yaml_gaps=frozenset({CG_BS, "torch_compile_config"})),
    "dsr1-fp8-h200-sglang": Key(NV, SGL_CU130, [(8, 1, False, 4, 64)], dsr1_fp8_h200),
    "dsr1-fp8-h200-sglang-mtp": Key(NV, SGL_CU130, [(8, 1, False, 4, 64)], dsr1_fp8_h200_mtp),
    "dsr1-fp8-h200-trt": Key(NV, TRT, [(8, 8, False, 4, 32), (8, 8, True, 64, 64)],
                             dsr1_fp8_h200_trt, ["dsr1-fp8-h200-trt", "dsr1-fp8-h200-trt-dpa"]),
    "dsr1-fp8-h200-trt-mtp": Key(NV, TRT, [(8, 8, False, 4, 32), (8, 8, True, 64, 256)],
                                 dsr1_fp8_h200_trt_mtp,
                                 ["dsr1-fp8-h200-trt-mtp", "dsr1-fp8-h200-trt-mtp-dpa"]),
    # configs/amd-master.yaml@7efe2986c714f7642abe80e9ff0f1884d50a413a
    "dsr1-fp4-mi355x-sglang": Key(AMD, SGL_MI35X, [(4, 1, False, 4, 64), (8, 1, False, 4, 64)],
                                  dsr1_fp4_mi355x),
    "dsr1-fp4-mi355x-sglang-mtp": Key(AMD, SGL_MI35X, [(8, 1, False, 4, 64)], dsr1_fp4_mi355x_mtp),
    "dsr1-fp4-mi355x-atom": Key(AMD, ATOM_0511, [(4, 1, False, 4, 256), (8, 1, False, 4, 4)],
                                dsr1_fp4_mi355x_atom),
    "dsr1-fp4-mi355x-atom-mtp": Key(AMD, ATOM_0511, [(8, 1, False, 4, 256)],
                                    dsr1_fp4_mi355x_atom_mtp),
    "dsr1-fp8-mi300x-sglang": Key(AMD, SGL_MI30X, [(8, 1, False, 4, 64)], dsr1_fp8_mi300x),
    "dsr1-fp8-mi325x-sglang": Key(AMD, SGL_MI30X, [(8, 1, False, 4, 64)], dsr1_fp8_mi325x),
    "dsr1-fp8-mi325x-sglang-mtp": Key(AMD, SGL_MI30X, [(8, 1, False, 4, 64)], None),
    "dsr1-fp8-mi355x-sglang": Key(AMD, SGL_MI35X, [(4, 1, False, 32, 64), (8, 1, False, 4, 64)],
                                  dsr1_fp8_mi355x),
    "dsr1-fp8-mi355x-sglang-mtp": Key(AMD, SGL_MI35X, [(8, 1, False, 4, 64)],
                                      dsr1_fp8_mi355x_mtp),
    "dsr1-fp8-mi355x-atom": Key(AMD, ATOM_0511, [(8, 1, False, 4, 128)], dsr1_fp8_mi355x_atom),
    "dsr1-fp8-mi355x-atom-mtp": Key(AMD, ATOM_013, [(8, 1, False, 4, 256)],
                                    dsr1_fp8_mi355x_atom_mtp),
    # DeepSeek-V4-Pro, nvidia-master.yaml@11776f53 (the vLLM keys; others: README)
    "dsv4-fp4-b200-vllm": Key(NV, "vllm/vllm-openai:v0.25.0",
                              [(8, 1, False, 1, 64), (8, 8, False, 128, 256),
                               (8, 8, True, 64, 1024)], dsv4_fp4_b200_vllm),
    "dsv4-fp4-b200-vllm-mtp": Key(NV, "vllm/vllm-openai:v0.25.0",
                                  [(8, 1, False, 1, 64), (8, 8, False, 128, 256),
                                   (8, 8, True, 64, 256)], dsv4_fp4_b200_vllm_mtp),
    "dsv4-fp4-b300-vllm": Key(NV, "vllm/vllm-openai:v0.25.0",
                              [(4, 1, False, 1, 64), (8, 1, False, 1, 4), (4, 4, True, 256, 512),
                               (8, 8, True, 2048, 2048)], dsv4_fp4_b300_vllm),
    "dsv4-fp4-b300-vllm-mtp": Key(NV, "vllm/vllm-openai:v0.25.0",
                                  [(4, 1, False, 1, 64), (8, 1, False, 1, 8),
                                   (4, 4, False, 64, 256), (4, 4, True, 256, 512)],
                                  dsv4_fp4_b300_vllm_mtp),
    "dsv4-fp8-h200-vllm": Key(NV, "vllm/vllm-openai:v0.25.1",
                              [(8, 1, False, 1, 256), (8, 8, True, 1, 256)], dsv4_fp8_h200),
    "dsv4-fp8-h200-vllm-mtp": Key(NV, "vllm/vllm-openai:v0.25.1",
                                  [(8, 1, False, 1, 256), (8, 8, True, 1, 256)],
                                  dsv4_fp8_h200_mtp),
    "dsv4-fp8-h200-sglang": Key(NV, DSV4_HOPPER, [(8, 1, False, 1, 1), (8, 1, False, 4, 64)],
                                dsv4_fp8_h200_sglang),
    "dsv4-fp8-h200-sglang-mtp": Key(NV, DSV4_HOPPER, [(8, 1, False, 1, 1), (8, 1, False, 4, 64)],
                                    dsv4_fp8_h200_sglang_mtp),
    # DeepSeek-V4-Pro, amd-master.yaml@7efe2986 (the vLLM keys)
    "dsv4-fp4-mi355x-vllm": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 512)], dsv4_fp4_mi355x_vllm),
    "dsv4-fp4-mi355x-vllm-mtp": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 512)],
                                    dsv4_fp4_mi355x_vllm_mtp),
    "dsv4-fp8-mi300x-vllm": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 256)], dsv4_fp8_mi300x),
    "dsv4-fp8-mi300x-vllm-mtp": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 128)], None),
    "dsv4-fp8-mi325x-vllm": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 256)], None),
    "dsv4-fp8-mi325x-vllm-mtp": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 128)], dsv4_fp8_mi325x_mtp),
}


def expand(start: int, end: int) -> list[int]:
    """conc-start..conc-end: doubling, the last value clamped to conc-end (§1.4)."""
    out, c = [], start
    while c < end:
        out.append(c)
        c *= 2
    return [*out, end]


def recipes_of(key: str) -> list[str]:
    return CATALOG[key].recipes or [key]


@cache
def compose(name: str):
    return compose_sweep([f"recipe={name}"])


def key_launches(key: str):
    for name in recipes_of(key):
        for launch in launches(compose(name)):
            yield name, launch


def option_groups(argv: list[str], prefix: int) -> tuple[list[str], list[list[str]]]:
    """The leading arguments in order, then every option with the values that follow it,
    sorted (argparse/click read options in any order)."""
    groups: list[list[str]] = []
    for a in argv[prefix:]:
        if a.startswith("-") or not groups:
            groups.append([a])
        else:
            groups[-1].append(a)
    return argv[:prefix], sorted(groups)


def yaml_diff(a: Any, b: Any, path: str = "") -> set[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: set[str] = set()
        for k in a.keys() | b.keys():
            p = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.add(p)
            else:
                out |= yaml_diff(a[k], b[k], p)
        return out
    return set() if a == b else {path}


KEYS = sorted(CATALOG)


@pytest.mark.parametrize("key", KEYS)
def test_launches_are_the_catalog_rows(key: str) -> None:
    got = sorted((ln.sc.topology.tp, ln.sc.topology.ep, ln.sc.topology.dp_attention,
                  ln.sc.concurrency[0]) for _, ln in key_launches(key))
    want = sorted((tp, ep, dp, c) for tp, ep, dp, a, b in CATALOG[key].rows for c in expand(a, b))
    assert got == want
    for _, ln in key_launches(key):
        assert len(ln.sc.concurrency) == 1  # one server launch per concurrency, as InferenceX
        assert (ln.sc.scenario.isl, ln.sc.scenario.osl) == (ISL, OSL)


@pytest.mark.parametrize("key", KEYS)
def test_recipe_names_its_upstream_source_and_image(key: str) -> None:
    k = CATALOG[key]
    for name in recipes_of(key):
        sc = compose(name)
        assert sc.relaunch_per_concurrency
        assert k.catalog in sc.recipe_source and f"key {key};" in sc.recipe_source
        assert sc.engine.image == k.image
        if k.script is not None:
            script = k.script.__name__.lstrip("_")
            assert f"fixed_seq_len/{script}" in sc.recipe_source or key.endswith("b300-sglang-mtp")


@pytest.mark.parametrize("key", [k for k in KEYS if CATALOG[k].script is not None])
def test_every_launch_is_the_scripts_command(key: str) -> None:
    k = CATALOG[key]
    for name, ln in key_launches(key):
        t, conc = ln.sc.topology, ln.sc.concurrency[0]
        want = k.script(t.tp, t.ep, t.dp_attention, conc)
        plan = make_adapter(ln.sc).launch_plan(port=8888, max_concurrency=conc)
        # inside the recipe's image: docker run ... -e NAME ... IMAGE <the server command>
        i = plan.argv.index(ln.sc.engine.image)
        argv = plan.argv[i + 1:]
        assert [plan.argv[j + 1] for j in range(i) if plan.argv[j] == "-e"] == sorted(plan.env)
        expected = list(want.argv)
        if ln.sc.engine.kind == "sglang":
            expected.append("--enable-metrics")  # the harness's, to verify acceptance
        where = f"{name} {ln.tag}"
        assert option_groups(argv, want.prefix) == option_groups(expected, want.prefix), where
        assert len(argv) == len(expected), where
        assert plan.env == want.env, where
        if want.yaml is not None:
            got = yaml.safe_load(plan.files[EXTRA_OPTIONS_FILE])
            for m, v in METRICS_OPTIONS.items():  # the harness's, for /prometheus/metrics
                assert got.pop(m) == v, where
            gaps = yaml_diff(got, want.yaml)
            assert gaps <= k.yaml_gaps, f"{where}: {sorted(gaps)}"
            if CG_BS in gaps:  # graphs cover every batch the launch runs
                assert (got["cuda_graph_config"]["max_batch_size"]
                        >= want.yaml["cuda_graph_config"]["max_batch_size"]), where


def test_trtllm_yaml_gaps_are_only_where_documented() -> None:
    """Where no gap is declared the YAML is the script's for every launch, and each declared
    gap really occurs (so the list shrinks when the schema gains row-level extra_options)."""
    for key, k in CATALOG.items():
        if k.script is None or not k.yaml_gaps:
            continue
        seen: set[str] = set()
        for _, ln in key_launches(key):
            t, conc = ln.sc.topology, ln.sc.concurrency[0]
            want = k.script(t.tp, t.ep, t.dp_attention, conc)
            got = yaml.safe_load(make_adapter(ln.sc).launch_plan(8888, conc).files[
                EXTRA_OPTIONS_FILE])
            for m in METRICS_OPTIONS:
                got.pop(m)
            seen |= yaml_diff(got, want.yaml)
        assert seen == k.yaml_gaps, key


def _first_plan(name: str, acceptance: AcceptancePlan):
    ln = launches(compose(name))[0]
    return make_adapter(ln.sc, acceptance).launch_plan(8888, ln.sc.concurrency[0])


def test_injected_acceptance_reaches_the_upstream_commands() -> None:
    """Each engine's injection knob added to the script's command, nothing else changed."""
    inj = AcceptancePlan("injected", 2.27, "t")
    p = _first_plan("dsr1-fp4-b200-sglang-mtp", inj)
    assert p.env["SGLANG_SIMULATE_ACC_LEN"] == "2.27"
    assert p.env["SGLANG_ENABLE_SPEC_V2"] == "1"  # the script's own env stays
    p = _first_plan("dsv4-fp4-b200-vllm-mtp", inj)
    i = p.argv.index("--speculative-config")
    assert json.loads(p.argv[i + 1]) == {"method": "mtp", "num_speculative_tokens": 2,
                                         "rejection_sample_method": "synthetic",
                                         "synthetic_acceptance_length": 2.27}
    p = _first_plan("dsr1-fp8-h200-trt-mtp", inj)
    assert p.env == {"PYTHONNOUSERSITE": "1", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "1.27"}
    p = _first_plan("dsr1-fp8-mi355x-atom-mtp", inj)
    assert p.argv[-2:] == ["--spec-decode-acceptance-length", "2.27"]


@pytest.mark.parametrize("key", [k for k in KEYS if CATALOG[k].script is None])
def test_untranscribed_keys_run_the_adapters_own_flags(key: str) -> None:
    """No script in the index: the adapter's own flags at the catalog's topology, and the
    recipe says so."""
    sc = compose(key)
    assert not sc.engine.argv_template and "not transcribed" in sc.recipe_source
    for ln in launches(sc):
        argv = make_adapter(ln.sc).launch_plan(8888, ln.sc.concurrency[0]).argv
        if ln.sc.engine.kind == "sglang":
            assert argv[argv.index("--tp") + 1] == str(ln.sc.topology.tp)
            i = argv.index("--speculative-algorithm")
            assert argv[i:i + 2] == ["--speculative-algorithm", "EAGLE"]
        else:
            assert argv[argv.index("--tensor-parallel-size") + 1] == str(ln.sc.topology.tp)
            if ln.sc.speculator.method == "mtp":
                spec = json.loads(argv[argv.index("--speculative-config") + 1])
                assert spec == {"method": "mtp", "num_speculative_tokens": 2}


@pytest.mark.parametrize("name", sorted(p.stem for p in RECIPES.glob("*.yaml")))
def test_every_recipe_composes_and_validates(name: str) -> None:
    sc = compose(name)  # to_sweep_config checks every launch
    for ln in launches(sc):
        make_adapter(ln.sc).launch_plan(8888, max(ln.sc.concurrency))


def test_every_catalog_recipe_file_is_covered() -> None:
    covered = {r for key in CATALOG for r in recipes_of(key)}
    assert covered == {p.stem for p in RECIPES.glob("*.yaml")}
