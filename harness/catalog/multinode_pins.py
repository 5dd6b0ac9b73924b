"""Which srt-slurm checkout each InferenceX multi-node launcher deploys a key with, and which
of InferenceX's own recipe folders it copies over that checkout first.

Transcribed from the launchers' clone/checkout/`cp -rT` branches at
SemiAnalysisAI/InferenceX@843c6254 (runners/launch_gb200-nv.sh, launch_gb300-nv.sh,
launch_b300-nv.sh, launch_b200-dgxc.sh (b200-dgxc-slurm links to it),
launch_b200-nscale-slurm.sh, launch_h200-dgxc-slurm.sh, launch_h100-dgxc-slurm.sh), branch
for branch in their order. A branch that clones a fork this importer cannot read
(cquil11/srt-slurm-nv, functionstackx/srt-slurm-nv, edwingao28/srt-slurm's power producer)
is returned as unavailable with the fork's name. A moving ref (`main`, a branch) is read as
it stood at the InferenceX commit's date (multinode_capture.resolve_ref)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

NV = "NVIDIA/srt-slurm"
R = "benchmarks/multi_node/srt-slurm-recipes/"


@dataclass(frozen=True)
class Pin:
    repo: str  # owner/name
    ref: str  # tag, branch or commit the launcher checks out
    # (folder under InferenceX's srt-slurm-recipes/, destination in the srt-slurm checkout)
    overlays: tuple[tuple[str, str], ...] = ()
    setup_script: str | None = None  # srtctl apply --setup-script
    launcher: str = ""
    gpus_per_node: int = 4  # srtslurm.yaml gpus_per_node the launcher writes
    unavailable: str | None = None  # why this checkout cannot be read here
    # the launcher also copies the row's own CONFIG_FILE from InferenceX's srt-slurm-recipes
    # over the checkout where InferenceX has it
    copies_config: bool = False
    # the launcher runs runners/inject_synthetic_acceptance.py on the recipe before srtctl
    injects_synthetic: bool = False
    notes: list[str] = field(default_factory=list)


def _fork(name: str, launcher: str, ref: str) -> Pin:
    return Pin(name, ref, launcher=launcher,
               unavailable=f"{launcher} clones the fork {name}@{ref}, which is not public "
                           "to this importer (the fetch tool, asked for github:"
                           f"{name} on 2026-12-07 and again on 2026-12-08: \"No snapshot of "
                           "that repository can be had here.\")")


def _ov(*paths: str) -> tuple[tuple[str, str], ...]:
    """`cp -rT $WS/benchmarks/multi_node/srt-slurm-recipes/X recipes/X` for each X."""
    return tuple((p, "recipes/" + p) for p in paths)


def gb200_nv(k: dict, power: bool) -> Pin:
    """runners/launch_gb200-nv.sh@843c6254 lines 403-549."""
    lz, fw, m, p = "runners/launch_gb200-nv.sh", k["framework"], k["prefix"], k["precision"]
    ag = k["agentic"]
    setup = "install-torchao.sh" if fw == "dynamo-sglang" else None

    def pin(ref: str, ov=(), repo: str = NV) -> Pin:  # line 709 injects synthetic acceptance
        return Pin(repo, ref, ov, setup, lz, 4, injects_synthetic=True)

    if ag and m == "glm5.2" and p == "fp4" and fw == "dynamo-sglang":
        return pin("v1.0.50", _ov("sglang/glm5.2/gb200-fp4/agentic"))
    if ag and m == "minimaxm3" and p == "fp4" and fw == "dynamo-vllm":
        return pin("v1.0.50", _ov("vllm/minimax-m3/gb200-fp4/agentic"))
    if ag and ((m == "qwen3.5" and p == "fp4" and fw == "dynamo-sglang")
               or (m == "dsv4" and p == "fp4" and fw == "dynamo-vllm")):
        return pin("v1.0.45", _ov("sglang/qwen3.5/gb200-fp4/agentic" if m == "qwen3.5"
                                  else "vllm/deepseek-v4/agentic"))
    if ag and m == "kimik3":
        return pin("v1.0.53", _ov("vllm/kimi-k3/agentic"))
    if ag:
        return _fork("cquil11/srt-slurm-nv", lz, "de59739b172e507e15ebf145bfe305f606e82fbf")
    if fw == "dynamo-vllm" and m == "dsv4":
        return pin("v1.0.31", _ov("vllm/deepseek-v4"))
    if fw == "dynamo-sglang" and m == "dsv4":
        if power:
            return _fork("edwingao28/srt-slurm", lz, "6fc1bed01a0b82dae0088a105c03ce0cfb353443")
        return pin("main", _ov("sglang/deepseek-v4"))
    if fw == "dynamo-sglang" and m == "glm5.1":
        return pin("sa-submission-q2-2026", _ov("sglang/glm5"))
    if fw == "dynamo-sglang" and m == "qwen3.5":
        if power:
            return _fork("edwingao28/srt-slurm", lz, "6fc1bed01a0b82dae0088a105c03ce0cfb353443")
        return pin("main", _ov("sglang/qwen3.5"))
    if fw == "dynamo-vllm" and m == "minimaxm3" and p == "fp8":
        return pin("sa-submission-q2-2026", _ov("vllm/minimax-m3-gb200-fp8"))
    if fw == "dynamo-vllm" and m == "kimik2.5" and p == "fp4":
        return pin("main", _ov("vllm/kimi-k2.5-fp4"))
    if fw == "dynamo-vllm":
        return pin("sa-submission-q2-2026")
    if fw == "dynamo-trt" and m == "kimik2.5":
        return pin("sa-submission-q2-2026")
    if fw == "dynamo-trt" and m == "glm5":
        return pin("v1.0.26", _ov("trtllm/glm5"))
    return _fork("cquil11/srt-slurm-nv", lz, "cam/sa-submission-q2-2026")


def gb300_nv(k: dict, power: bool) -> Pin:
    """runners/launch_gb300-nv.sh@843c6254 lines 209-420 (no --setup-script is passed)."""
    lz, fw, m, p = "runners/launch_gb300-nv.sh", k["framework"], k["prefix"], k["precision"]
    ag = k["agentic"]

    def pin(ref: str, ov=()) -> Pin:  # line 526 injects synthetic acceptance
        return Pin(NV, ref, ov, None, lz, 4, injects_synthetic=True)

    if ag and fw == "dynamo-trt" and m == "qwen3.5":
        return pin("v1.0.50", _ov("trtllm/qwen3.5/gb300-fp4/disagg/agentx"))
    if ag and fw == "dynamo-trt" and m == "glm5.2":
        return pin("v1.0.38", (("trtllm/glm5.2", R + "trtllm/glm5.2"),))
    if ag and fw == "dynamo-sglang" and m == "qwen3.5":
        return pin("v1.0.38", _ov("sglang/qwen3.5"))
    if ag and fw == "dynamo-sglang" and m == "dsv4":
        return pin("v1.0.38", _ov("sglang/deepseek-v4/agentic"))
    if ag and fw == "dynamo-trt" and m == "dsv4":
        return pin("v1.0.50", (("trtllm/deepseek-v4", R + "trtllm/deepseek-v4"),))
    if ag and fw == "dynamo-sglang" and m == "glm5.2":
        return pin("main", _ov("sglang/glm5.2/gb300-fp4"))
    if ag:
        return pin("v1.0.36", _ov("vllm/deepseek-v4/agentic", "vllm/minimax-m3/agentic",
                                  "vllm/kimi-k3/agentic"))
    if fw == "dynamo-vllm" and m == "dsv4":
        return pin("aflowers/gb200-dsv4-recipes", _ov("vllm/deepseek-v4"))
    if fw == "dynamo-sglang" and m == "dsv4":
        if power:
            return _fork("edwingao28/srt-slurm", lz, "6fc1bed01a0b82dae0088a105c03ce0cfb353443")
        return pin("v1.0.25", _ov("sglang/deepseek-v4/8k1k"))
    if fw == "dynamo-sglang" and m == "qwen3.5":
        if power:
            return _fork("edwingao28/srt-slurm", lz, "6fc1bed01a0b82dae0088a105c03ce0cfb353443")
        return pin("v1.0.25" if p == "fp8" else "sa-submission-q2-2026", _ov("sglang/qwen3.5"))
    if fw == "dynamo-trt" and m == "dsv4":
        return pin("sa-submission-q2-2026")
    if fw == "dynamo-trt" and m == "qwen3.5" and p == "fp4":
        return pin("v1.0.29", (("trtllm/qwen3.5/gb300-fp4/disagg",
                                "recipes/trtllm/qwen3.5/gb300-fp4/disagg"),))
    return pin("sa-submission-q2-2026")


def b300_nv(k: dict, power: bool) -> Pin:
    """runners/launch_b300-nv.sh@843c6254 lines 73-117."""
    lz, fw, m, p = "runners/launch_b300-nv.sh", k["framework"], k["prefix"], k["precision"]

    def pin(ref: str, ov=()) -> Pin:
        return Pin(NV, ref, ov, None, lz, 8)

    if k["agentic"]:
        return _fork("cquil11/srt-slurm-nv", lz, "cam/sa-submission-q2-2026")
    if fw == "dynamo-vllm" and m == "dsv4":
        return pin("aflowers/vllm-gb200-v0.20.0", _ov("vllm/deepseek-v4"))
    if fw == "dynamo-sglang" and m == "dsv4" and p == "fp4":
        return pin("c180328b98c3793ca84a1e24a030f90545eb7d5d", _ov("sglang/deepseek-v4"))
    return pin("sa-submission-q2-2026")


def b200_dgxc(k: dict, power: bool) -> Pin:
    """runners/launch_b200-dgxc.sh@843c6254 lines 171-222 (b200-dgxc-slurm is a link)."""
    lz, fw, m, p = "runners/launch_b200-dgxc.sh", k["framework"], k["prefix"], k["precision"]

    def pin(ref: str, ov=()) -> Pin:
        return Pin(NV, ref, ov, None, lz, 8)

    if k["agentic"] and m == "kimik3":
        return _fork("functionstackx/srt-slurm-nv", lz,
                     "df5baa93f4caf5169dea2a4236ad2cc742fe40e7")
    if fw == "dynamo-vllm" and m == "dsv4":
        return pin("aflowers/vllm-gb200-v0.20.0", _ov("vllm/deepseek-v4"))
    if fw == "dynamo-vllm" and m == "kimik2.6" and p == "fp4":
        return pin("c180328b98c3793ca84a1e24a030f90545eb7d5d", _ov("vllm/kimi-k2.6"))
    if fw == "dynamo-vllm" and m == "minimaxm3" and p == "fp4":
        return pin("main", _ov("vllm/minimax-m3/b200-fp4"))
    if fw == "dynamo-sglang" and m == "glm5" and p == "fp8":
        return pin("main")
    if fw == "dynamo-sglang" and m == "dsr1" and p == "fp4":
        return pin("a98738de9b2233459b5456e9ed71af09ce893f92", _ov("sglang/dsr1/b200-fp4"))
    if fw == "dynamo-trt" and m == "kimik2.5" and p == "fp4":
        return pin("v1.0.29", (("trtllm/kimi-k2.5/disagg/trtllm_dynamo/b200-fp4",
                                "recipes/trtllm/kimi-k25-nvfp4/b200-fp4"),))
    return pin("sa-submission-q2-2026")


def b200_nscale(k: dict, power: bool) -> Pin:
    """runners/launch_b200-nscale-slurm.sh@843c6254 lines 67-94."""
    lz, fw, m = "runners/launch_b200-nscale-slurm.sh", k["framework"], k["prefix"]

    def pin(ref: str, ov=()) -> Pin:  # line 232 injects synthetic acceptance
        return Pin(NV, ref, ov, None, lz, 8, injects_synthetic=True)

    if k["agentic"] and m == "kimik3":
        return pin("217f9438", _ov("vllm/kimi-k3/agentic"))
    if m == "dsv4" and fw == "dynamo-sglang":
        return pin("04e87fcc505d6d851451781a5499ca19a02ec2b4", _ov("sglang/deepseek-v4"))
    if m == "dsv4":
        return pin("aflowers/vllm-gb200-v0.20.0", _ov("vllm/deepseek-v4"))
    return pin("c180328b98c3793ca84a1e24a030f90545eb7d5d", _ov("vllm/kimi-k2.6"))


def h200_dgxc(k: dict, power: bool) -> Pin:
    """runners/launch_h200-dgxc-slurm.sh@843c6254 lines 77-100; after any checkout, lines
    20-21 and 222-225 copy the row's own recipe from InferenceX's srt-slurm-recipes over it
    where InferenceX has it."""
    lz, fw, m = "runners/launch_h200-dgxc-slurm.sh", k["framework"], k["prefix"]

    def pin(ref: str, ov=()) -> Pin:
        return Pin(NV, ref, ov, None, lz, 8, copies_config=True)

    if k["agentic"] and fw == "dynamo-sglang" and m == "glm5.2":
        return pin("v1.0.44")
    if k["agentic"] and fw == "vllm" and m == "kimik3":
        return _fork("functionstackx/srt-slurm-nv", lz,
                     "df5baa93f4caf5169dea2a4236ad2cc742fe40e7")
    if k["agentic"] and fw == "dynamo-sglang" and m == "dsv4":
        return pin("v1.0.38", (("sglang/deepseek-v4/agentic/agg-h200-tp8-mtp-kvoffload.yaml",
                                "recipes/sglang/deepseek-v4/agentic/"
                                "agg-h200-tp8-mtp-kvoffload.yaml"),))
    if k["agentic"]:
        return _fork("cquil11/srt-slurm-nv", lz, "cam/sa-submission-q2-2026")
    return pin("sa-submission-q2-2026")


def h100_dgxc(k: dict, power: bool) -> Pin:
    """runners/launch_h100-dgxc-slurm.sh@843c6254 lines 49-56."""
    lz = "runners/launch_h100-dgxc-slurm.sh"
    if k["agentic"]:
        return _fork("cquil11/srt-slurm-nv", lz, "cam/sa-submission-q2-2026")
    return Pin(NV, "sa-submission-q2-2026", (), None, lz, 8)


LAUNCHERS = {"gb200-nv": gb200_nv, "gb300-nv": gb300_nv, "b300-nv": b300_nv,
             "b200-dgxc": b200_dgxc, "b200-dgxc-slurm": b200_dgxc,
             "b200-nscale-slurm": b200_nscale, "h200-dgxc-slurm": h200_dgxc,
             "h100-dgxc-slurm": h100_dgxc}


def uses_power(ix_git: str, commit: str, cfg: str) -> bool:
    """The launcher's dcgm-power test: InferenceX's copy of the recipe carries a telemetry
    block with `provider: dcgm-power` and `enabled: true` (launch_gb200-nv.sh@843c6254)."""
    rel = cfg.split(":", 1)[0]
    rel = rel[len("recipes/"):] if rel.startswith("recipes/") else rel
    try:
        text = subprocess.run(["git", "-C", ix_git, "show", f"{commit}:{R}{rel}"],
                              check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError:
        return False
    block, on, prov = False, False, False
    for line in text.splitlines():
        if line.startswith("telemetry:"):
            block = True
            continue
        if block and line[:1] not in (" ", ""):
            block = False
        if block and line == "  provider: dcgm-power":
            prov = True
        if block and line == "  enabled: true":
            on = True
    return on and prov


def pin_for(launcher: str, key: dict, power: bool) -> Pin | None:
    """The checkout a launcher uses for a key ({framework, prefix, precision, agentic}), or
    None when the launcher deploys without srt-slurm (AMD, llm-d, TileRT)."""
    fn = LAUNCHERS.get(launcher)
    return fn(key, power) if fn else None
