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
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

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
    """A launch that reads checkout files needs engine.workspace, and a directory there;
    engine.files go under results/ of an image's /workspace."""
    check_files(sc, where)
    files = checkout_files(sc)
    ws = sc.engine.workspace
    if files and not ws:
        raise ConfigError.at(where, "engine.workspace",
            f"this command reads files of upstream's checkout at /workspace ({', '.join(files)})",
            "set engine.workspace to a checkout of the InferenceX commit the recipe names "
            "(recipe_source); it is mounted read-only at /workspace")
    if ws and not Path(ws).is_dir():
        raise ConfigError.at(where, "engine.workspace",
                             f"{ws} is not a directory",
                             "give the path of an InferenceX checkout (git clone "
                             "https://github.com/SemiAnalysisAI/InferenceX)")


def docker_mounts(sc: SweepConfig, launch_dir: str, files: Mapping[str, str] | None = None
                  ) -> list[str]:
    """docker -v arguments for the checkout (read-only), the job's results directory and the
    plan's engine.files (each read-only at its /workspace path)."""
    ws = sc.engine.workspace
    out = [] if not ws else ["-v", f"{Path(ws).resolve()}:{WORKSPACE}:ro",
                             "-v", f"{launch_dir}/results:{WORKSPACE}/results"]
    for host, inside in file_mounts(files, launch_dir):
        out += ["-v", f"{host}:{inside}:ro"]
    return out


def pyxis_mounts(sc: SweepConfig, launch_dir: str, files: Mapping[str, str] | None = None
                 ) -> str:
    """Extra entries of srun --container-mounts (comma-led), or ''."""
    ws = sc.engine.workspace
    out = "" if not ws else (f",{Path(ws).resolve()}:{WORKSPACE}:ro,"
                             f"{launch_dir}/results:{WORKSPACE}/results")
    return out + "".join(f",{host}:{inside}:ro" for host, inside in file_mounts(files, launch_dir))


# engine.files: what upstream's script writes under /workspace before the server starts and
# the server reads (Mooncake's store config at $MOONCAKE_CONFIG_PATH,
# benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh@843c6254). Each is written into
# the launch dir under a flat name (a plan's files are written straight into the launch dir,
# harness/engines/process.py, which makes no subdirectories) and mounted read-only at its
# /workspace path in the engine's container.
FILE_PREFIX = "workspace--"


def launch_name(rel: str) -> str:
    """The file's name in the launch dir, for its path under /workspace."""
    return FILE_PREFIX + rel.replace("/", "--")


def rendered_files(adapter: Any, port: int) -> dict[str, str]:
    """engine.files with their placeholders filled for the engine listening on `port` ({port}
    is the job's port: the engine's minus engine.port_offset), by launch-dir name."""
    from harness.engines.template import render, template_values

    sc = adapter.sc
    if not sc.engine.files:
        return {}
    m = sc.model
    values = template_values(sc, adapter.checkpoint, m.served_name or m.name, "python3",
                             port - sc.engine.port_offset, max(sc.concurrency, default=1))
    return {launch_name(rel): render([text], values)[0]
            for rel, text in sorted(sc.engine.files.items())}


def file_mounts(files: Mapping[str, str] | None, launch_dir: str) -> list[tuple[str, str]]:
    """(launch-dir path, container path) of each engine.files file in a plan's files."""
    return [(f"{launch_dir}/{name}", f"{WORKSPACE}/{name[len(FILE_PREFIX):].replace('--', '/')}")
            for name in sorted(files or {}) if name.startswith(FILE_PREFIX)]


def check_files(sc: SweepConfig, where: Locate) -> None:
    """engine.files: relative paths under results/ (the job's writable outputs), in an image."""
    for rel in sc.engine.files:
        parts = PurePosixPath(rel).parts
        if (rel.startswith("/") or ".." in parts or parts[:1] != ("results",) or len(parts) < 2
                or "--" in rel):  # "--" separates the parts of its launch-dir name
            raise ConfigError.at(where, "engine.files",
                                 f"{rel!r} is not a file under results/",
                                 "name it by its path under the container's /workspace, in "
                                 "results/, without '--' (e.g. results/mooncake_config.json)")
    if sc.engine.files and not sc.engine.image and sc.engine.kind != "endpoint":
        raise ConfigError.at(where, "engine.files",
                             "these files are written for the container's /workspace "
                             f"({', '.join(sorted(sc.engine.files))}) and this engine has no image",
                             "set engine.image, or remove engine.files")
