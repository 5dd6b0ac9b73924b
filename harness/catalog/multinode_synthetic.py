"""Synthetic acceptance as the launchers apply it before `srtctl apply`.

A row whose additional-settings say `SYNTHETIC_ACCEPTANCE=true` (with a
`SYNTHETIC_ACCEPTANCE_LENGTH`) has them exported by the workflow
(.github/workflows/benchmark-multinode-tmpl.yml@843c6254 line 355); runners/launch_gb200-nv.sh,
launch_gb300-nv.sh and launch_b200-nscale-slurm.sh then run
`runners/inject_synthetic_acceptance.py "$CONFIG_PATH" "$FRAMEWORK"`, which rewrites each
`speculative-config` of the recipe to synthetic rejection sampling at that acceptance length
(runners/synthetic_injectors/vllm.py, sglang.py). Here upstream's own injector runs, from the
InferenceX checkout at the catalog's commit, on the recipe in the prepared srt-slurm tree."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from harness.catalog.multinode_template import NotCaptured

# the files the injector reads: itself and its backends (its reference table of acceptance
# lengths, benchmarks/speedbench-reference-al.yaml, is not in the tree at 843c6254; every row
# that injects names its length)
INJECTOR_PATHS = ["runners/inject_synthetic_acceptance.py", "runners/synthetic_injectors"]


def settings(row: dict[str, Any]) -> dict[str, str]:
    """The row's additional-settings as the workflow exports them (prefill's, then decode's)."""
    out: dict[str, str] = {}
    for s in [*(row["prefill"].get("additional-settings") or []),
              *(row["decode"].get("additional-settings") or [])]:
        name, _, value = s.partition("=")
        out[name] = value
    return out


def length(row: dict[str, Any]) -> str | None:
    """The acceptance length a row injects, '' for the reference table's, or None where the
    row does not inject (no SYNTHETIC_ACCEPTANCE=true, or EVAL_ONLY keeps the real draft)."""
    env = settings(row)
    on = env.get("SYNTHETIC_ACCEPTANCE", "false").strip().lower() == "true"
    if not on or env.get("EVAL_ONLY", "false").strip().lower() == "true":
        return None
    return env.get("SYNTHETIC_ACCEPTANCE_LENGTH", "").strip()


def inject(ix_root: Path, recipe: Path, framework: str, prefix: str, al: str,
           python: str) -> None:
    """Run upstream's injector on `recipe` in place, as the launcher does."""
    env = {"SYNTHETIC_ACCEPTANCE": "true", "SYNTHETIC_ACCEPTANCE_LENGTH": al,
           "MODEL_PREFIX": prefix, "FRAMEWORK": framework, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([python, str(ix_root / INJECTOR_PATHS[0]), str(recipe), framework],
                         cwd=ix_root, env=env, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        last = [ln for ln in (out.stderr + out.stdout).splitlines() if ln.strip()][-1:]
        raise NotCaptured("runners/inject_synthetic_acceptance.py refused the recipe: "
                          f"{(last or ['(no message)'])[0][:300]}")


def with_length(dep: dict[str, Any], al: str | None) -> dict[str, Any]:
    """The captured deployment with the length the injector forced, as a field beside its
    source (`Deployment.synthetic_acceptance_length`): what engine=multinode's acceptance plan
    reads. `al` None: the row does not inject, the deployment is returned as it is."""
    if al is None:
        return dep
    if not al:  # the injector looked the length up itself: which one is not known here
        raise NotCaptured("SYNTHETIC_ACCEPTANCE=true without a SYNTHETIC_ACCEPTANCE_LENGTH: "
                          "the length the injector looks up is not recorded")
    out = {"source": dep.get("source", ""), "synthetic_acceptance_length": float(al)}
    return {**out, **{k: v for k, v in dep.items() if k not in out}}
