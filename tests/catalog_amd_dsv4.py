"""Expected server commands of InferenceX's AMD DeepSeek-R1 scripts (SGLang, ATOM) and the
DeepSeek-V4-Pro scripts, written from the script text, path@commit on each function
(tests/test_catalog_golden.py)."""

from __future__ import annotations

from tests.catalog_common import (
    FP8,
    ISL,
    MAX_MODEL_LEN,
    MXFP4,
    MXFP4_PREVIEW,
    PORT,
    SGLANG,
    Cmd,
    H,
)

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


