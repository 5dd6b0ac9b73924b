"""Expected server commands of InferenceX's NVIDIA DeepSeek-R1 scripts (SGLang, TensorRT-LLM),
written from the script text, path@commit on each function (tests/test_catalog_golden.py)."""

from __future__ import annotations

from typing import Any

from harness.engines.trtllm import EXTRA_OPTIONS_FILE
from tests.catalog_common import (
    FP4,
    FP8,
    ISL,
    MAX_MODEL_LEN,
    PORT,
    SGLANG,
    Cmd,
    H,
    ceil64,
    sri,
)

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


