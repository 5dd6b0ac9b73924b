"""Acceptance that a captured multi-node deployment forces itself.

InferenceX's launchers run `runners/inject_synthetic_acceptance.py` on a row's srt-slurm
recipe before `srtctl apply` when the row sets `SYNTHETIC_ACCEPTANCE=true` (launch_gb200-nv.sh
line 709, launch_gb300-nv.sh line 526, launch_b200-nscale-slurm.sh line 232 at
SemiAnalysisAI/InferenceX@843c6254), and the capture keeps that rewrite
(harness/catalog/multinode_synthetic.py): the workers' argv or environment already carry the
synthetic acceptance (vLLM's `"rejection_sample_method":"synthetic"`, SGLang's
`SGLANG_SIMULATE_ACC_*`), and `Deployment.synthetic_acceptance_length` says at which length.
engine=multinode sets no knob of its own, so such a point is injected at that length and at no
other (docs/multinode.md)."""

from __future__ import annotations

from typing import Any

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.speculation.drafters import speculator_from_server_argv

INJECTOR = "runners/inject_synthetic_acceptance.py"
SAME = 0.005  # lengths closer than this are one length (the catalog writes two decimals)
WORKERS = ("prefill", "decode", "aggregated")  # the roles that draft


def deployment_length(sc: SweepConfig) -> float | None:
    """The acceptance length the launched deployment forces, or None: not engine=multinode,
    no row's deployment, or a deployment whose drafts are real."""
    dep = sc.engine.launch
    if sc.engine.kind != "multinode" or dep is None:
        return None
    al = dep.synthetic_acceptance_length
    return None if al is None else float(al)


def workers_speculation(sc: SweepConfig) -> dict[str, Any] | None:
    """What the deployment's drafting workers run, read from their captured argv as the
    catalog importer reads a server command (harness.speculation.drafters): {method, k,
    acceptance_length, ...}; None where no worker drafts or the family is not one it reads."""
    dep, family = sc.engine.launch, sc.engine.family
    if dep is None or family not in ("vllm", "sglang", "trtllm", "atom"):
        return None
    for r in dep.roles:
        got = speculator_from_server_argv(family, r.argv, r.env) if r.role in WORKERS else None
        if got:
            return got
    return None


def upstream_injection(sc: SweepConfig, where: str) -> tuple[float, str, str, int] | None:
    """(length, source, the workers' method and draft length) of the injection the deployment
    carries,
    or None where it carries none. Refused before anything starts: real acceptance asked of a
    deployment that forces synthetic acceptance, a requested length other than the
    deployment's, a field the workers' argv contradicts, a length outside [1, k+1]."""
    al = deployment_length(sc)
    if al is None:
        return None
    dep, spec = sc.engine.launch, sc.speculator
    assert dep is not None  # deployment_length saw it
    recipe = dep.source.split(" (", 1)[0] or "the row's captured deployment"
    runs = workers_speculation(sc) or {}
    argv_al = runs.get("acceptance_length")
    if argv_al is not None and abs(float(argv_al) - al) >= SAME:
        raise ConfigError(where, "engine.launch.synthetic_acceptance_length",
                          f"the deployment says AL {al:g}, its workers' argv inject "
                          f"{float(argv_al):g} ({recipe})",
                          "recapture the row (python -m harness.catalog.multinode_capture)")
    method, k = str(runs.get("method") or spec.method), int(runs.get("k") or spec.k)
    fix_row = ("or run a row captured without it (dsv4-fp4-gb200-dynamo-vllm-mtp2-nosynthetic "
               "is upstream's real-draft twin of the dsv4 GB200 keys)")
    if spec.acceptance.mode == "real":
        raise ConfigError(
            where, "speculator.acceptance.mode",
            f"this row's deployment ({recipe}) forces synthetic acceptance at AL {al:g} "
            f"(upstream's {INJECTOR}), so its drafts cannot be measured as real ones",
            f"leave speculator.acceptance.mode at auto or injected, {fix_row}")
    asked = spec.acceptance.length
    if asked is not None and abs(float(asked) - al) >= SAME:
        raise ConfigError(
            where, "speculator.acceptance.length",
            f"speculator.acceptance.length={float(asked):g}, but this row's deployment "
            f"({recipe}) forces AL {al:g} (upstream's {INJECTOR}); engine=multinode sets no "
            "acceptance knob of its own",
            f"leave speculator.acceptance.length unset (or set it to {al:g}), or recapture the "
            "row with the SYNTHETIC_ACCEPTANCE_LENGTH you want "
            "(python -m harness.catalog.multinode_capture, docs/multinode.md)")
    if not 1.0 <= al <= k + 1:
        raise ConfigError(where, "speculator.acceptance.length",
                          f"the deployment's AL {al:g} is outside [1, k+1] = [1, {k + 1}]",
                          "recapture the row (python -m harness.catalog.multinode_capture)")
    # the recipe's speculator labels the point; the workers draft what their argv says
    label = "" if (method, k) == (spec.method, spec.k) else (
        f"; its workers draft {method} k={k} (the recipe's speculator: {spec.method} "
        f"k={spec.k})")
    return al, (f"deployment: SYNTHETIC_ACCEPTANCE_LENGTH={al:g} injected by upstream's "
                f"{INJECTOR} into {recipe}{label}"), method, k
