"""A captured multi-node row's GPU count: every GPU of every worker role srt-slurm deploys.

InferenceX's master rows write a pool's `tp`, `ep`, `dp-attn` as the engine's own flags
(benchmarks/multi_node/srt-slurm-recipes/RECIPES.md@843c6254, "Field mapping": `tp` is
`tp-size`), not as a GPU count. For SGLang and TensorRT-LLM the engine's tensor-parallel size
is the worker's GPUs; for a vLLM data-parallel-attention worker it is the per-rank
`tensor-parallel-size` (1), the worker's GPUs being its expert-parallel size
(`tensor-parallel-size 1`, `data-parallel-size 8`, `enable-expert-parallel`: 8 GPUs). The
same vLLM worker is written `tp: 8, ep: 8, dp-attn: true` in dsv4-fp4-b200-dynamo-vllm and
`tp: 1, ep: 8, dp-attn: true` in dsv4-fp4-b200-dynamo-vllm-mtp (configs/nvidia-master.yaml),
and InferenceX's own single-node scripts spell DP attention as `tp` GPUs run as
`--tensor-parallel-size 1 --data-parallel-size $TP`
(benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh). The harness counts a pool's
GPUs as workers x tp x pp x pcp (PoolConfig.gpus), so a vLLM-spelled pool is read with `tp`
the GPUs each of its workers takes, as srt-slurm deploys it.

What InferenceX itself divides by: a fixed-seq-len result's per-GPU figures use the GPUs in
the result's name (`_gpus_N_ctx_P_gen_D`, .github/workflows/benchmark-multinode-tmpl.yml
"Process result" -> utils/process_result.py), which srtctl's benchmark writes from the
recipe's `resources` (NVIDIA/srt-slurm src/srtctl/benchmarks/sa_bench.py: prefill_gpus,
decode_gpus): the GPUs deployed. An agentic result's use the master row's pools, workers x tp
x pp x pcp (utils/agentic/aggregation/process_agentic_result.py `_gpu_shape`, from the
workflow's PREFILL_*/DECODE_* env): for a vLLM-spelled pool, fewer GPUs than run."""

from __future__ import annotations

from typing import Any

from harness.catalog.multinode_template import NotCaptured

WORKER_ROLES = ("prefill", "decode", "aggregated")


def pool_gpus(p: dict[str, Any]) -> int:
    """A pool's GPUs as InferenceX's agentic processing counts them: workers x tp x pp x pcp."""
    return p["workers"] * p["tp"] * p.get("pp", 1) * p.get("pcp", 1)


def deployed(dep: dict[str, Any]) -> dict[str, list[int]]:
    """Worker role -> the GPUs of each instance srt-slurm starts."""
    out: dict[str, list[int]] = {k: [] for k in WORKER_ROLES}
    for r in dep["roles"]:
        if r["role"] in out:
            out[r["role"]] += [int(r["gpus"])] * int(r["instances"])
    return out


def _vllm_dp(p: dict[str, Any], instances: list[int]) -> dict[str, Any] | None:
    """`p` with tp the GPUs each worker takes, where `p` is a data-parallel-attention pool
    written with vLLM's per-rank tensor-parallel size: its workers are deployed as many as it
    names, each on `ep` GPUs (vLLM's expert-parallel size is tensor x data parallel)."""
    per = p.get("pp", 1) * p.get("pcp", 1)
    if not p["dp_attention"] or len(instances) != p["workers"] or len(set(instances)) != 1:
        return None
    gpus = instances[0]
    if gpus % per or gpus // per != p["ep"] or p["ep"] <= p["tp"]:
        return None
    return {**p, "tp": gpus // per}


def read_pools(pre: dict[str, Any], dec: dict[str, Any], dep: dict[str, Any]
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The row's pools as srt-slurm deploys them (unchanged where they already count the
    deployed GPUs), or NotCaptured where the recipe takes other GPUs than the row can mean."""
    got = deployed(dep)
    if got["aggregated"]:
        if not got["prefill"] and not got["decode"]:
            if sum(got["aggregated"]) == pool_gpus(pre) + pool_gpus(dec):
                return pre, dec
            fixed = _vllm_dp(pre, got["aggregated"]) if dec["workers"] == 0 else None
            if fixed is not None:
                return fixed, dec
    else:
        out = []
        for p, side in ((pre, got["prefill"]), (dec, got["decode"])):
            out.append(p if sum(side) == pool_gpus(p) else _vllm_dp(p, side))
        if out[0] is not None and out[1] is not None:
            return out[0], out[1]
    raise NotCaptured(
        f"srt-slurm's recipe takes {sum(got['prefill'])} prefill / {sum(got['decode'])} decode"
        f" / {sum(got['aggregated'])} aggregated GPUs; the master row's pools count "
        f"{pool_gpus(pre)} prefill + {pool_gpus(dec)} decode (workers x tp x pp x pcp), and "
        "no pool is a data-parallel-attention pool written with vLLM's per-rank tp whose "
        "workers srt-slurm deploys on ep GPUs each")


def _spelled(p: dict[str, Any]) -> str:
    more = "".join(f", {k}: {p[k]}" for k in ("pp", "pcp") if k in p)
    return (f"{{num-worker: {p['workers']}, tp: {p['tp']}, ep: {p['ep']}, "
            f"dp-attn: {str(p['dp_attention']).lower()}{more}}}")


def note(pre: dict[str, Any], dec: dict[str, Any], dep: dict[str, Any], agentic: bool
         ) -> str | None:
    """What the reading changed on a row and what InferenceX divides by, or None where the
    master row's pools already count the deployed GPUs."""
    new_pre, new_dec = read_pools(pre, dec, dep)
    if (new_pre, new_dec) == (pre, dec):
        return None
    parts = [f"{side} {_spelled(old)}, which srt-slurm runs as {new['workers']} x "
             f"{pool_gpus(new) // max(1, new['workers'])} GPUs: read as tp {new['tp']}"
             for side, old, new in (("prefill", pre, new_pre), ("decode", dec, new_dec))
             if old != new]
    ours = f"{pool_gpus(new_pre)} + {pool_gpus(new_dec)}"
    theirs = f"{pool_gpus(pre)} + {pool_gpus(dec)}"
    if agentic:
        upstream = (f"InferenceX's agentic per-GPU figures divide by {theirs} GPUs "
                    "(utils/agentic/aggregation/process_agentic_result.py _gpu_shape: workers "
                    f"x tp x pp x pcp of the master row); the harness's by the {ours} deployed")
    else:
        upstream = (f"InferenceX's per-GPU figures divide by the {ours} deployed too "
                    "(srtctl's resources in sa-bench's result name, utils/process_result.py)")
    return ("the master row writes " + "; ".join(parts)
            + f" (its tp is vLLM's per-rank tensor-parallel-size). {upstream}.")
