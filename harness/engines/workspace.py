"""Upstream's checkout at /workspace: what a catalog command reads from it, and the mounts.

InferenceX runs every script inside the engine's container with its checkout mounted at
/workspace (runners/launch_mi355x-amds.sh@843c6254, `-v $GITHUB_WORKSPACE:/workspace`), so
captured commands name checkout files there: DeepSeek-V4's chat templates, Kimi-K3's container
patch script. The job's own outputs go to /workspace/results. A launch that reads such a file
needs `engine.workspace`, a checkout of the commit the recipe names, mounted read-only at
/workspace; results/ is the launch directory's own, so nothing is written into the checkout.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig

Locate = Callable[[str], str]

WORKSPACE = "/workspace"
_WRITTEN = ("results/", "gpu_metrics.csv")  # written by the job, not read from the checkout
_PATH = re.compile(r"/workspace/[^\s'\"=:,]+")


def checkout_files(sc: SweepConfig) -> list[str]:
    """Paths under /workspace the launch reads (argv template, extra args, env, helpers and
    setup steps), sorted, without the job's own outputs."""
    e = sc.engine
    texts = [*(e.argv_template or []), *e.extra_args, *e.env.values()]
    for h in e.helpers:
        texts += [*h.argv, *h.env.values()]
    for s in e.setup:
        texts += list(s.argv)
    found = {m.group(0) for t in texts for m in _PATH.finditer(str(t))}
    return sorted(p for p in found
                  if not p[len(WORKSPACE) + 1:].startswith(_WRITTEN))


def check_workspace(sc: SweepConfig, where: Locate) -> None:
    """A launch that reads checkout files needs engine.workspace, and a directory there."""
    files = checkout_files(sc)
    ws = sc.engine.workspace
    if files and not ws:
        raise ConfigError(
            where("engine.workspace"), "engine.workspace",
            f"this command reads files of upstream's checkout at /workspace ({', '.join(files)})",
            "set engine.workspace to a checkout of the InferenceX commit the recipe names "
            "(recipe_source); it is mounted read-only at /workspace")
    if ws and not Path(ws).is_dir():
        raise ConfigError(where("engine.workspace"), "engine.workspace",
                          f"{ws} is not a directory",
                          "give the path of an InferenceX checkout (git clone "
                          "https://github.com/SemiAnalysisAI/InferenceX)")


def docker_mounts(sc: SweepConfig, launch_dir: str) -> list[str]:
    """docker -v arguments for the checkout (read-only) and the job's results directory."""
    ws = sc.engine.workspace
    if not ws:
        return []
    return ["-v", f"{Path(ws).resolve()}:{WORKSPACE}:ro",
            "-v", f"{launch_dir}/results:{WORKSPACE}/results"]


def pyxis_mounts(sc: SweepConfig, launch_dir: str) -> str:
    """Extra entries of srun --container-mounts (comma-led), or ''."""
    ws = sc.engine.workspace
    if not ws:
        return ""
    return (f",{Path(ws).resolve()}:{WORKSPACE}:ro,"
            f"{launch_dir}/results:{WORKSPACE}/results")
