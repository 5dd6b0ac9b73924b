"""The local multi-node cluster and a Dynamo disaggregated deployment for the launch tests:
a real three-node Slurm cluster of network namespaces (harness/testing/slurm_cluster.sh) and
Dynamo's real frontend with its mocker workers (.venv-dynamo, `make dynamo-env`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.config.locations import repo_root

CLUSTER = repo_root() / "harness/testing/slurm_cluster.sh"
DYNAMO_PYTHON = repo_root() / ".venv-dynamo/bin/python"
STAND_IN_MODEL = repo_root() / ".venv-dynamo/model/smollm2"


def cluster_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(CLUSTER), *args], capture_output=True, text=True,
                          timeout=120)


def require_cluster() -> None:
    """Skip (or, where CI requires Slurm, fail) without what the namespace cluster needs."""
    if not shutil.which("slurmctld", path=os.environ.get("PATH", "") + ":/usr/sbin"):
        if os.environ.get("HARNESS_REQUIRE_SLURM"):
            pytest.fail("slurm-wlm is not installed and HARNESS_REQUIRE_SLURM is set")
        pytest.skip("slurm-wlm is not installed (CI installs it; apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("the namespace cluster needs root (ip netns, Slurm daemons)")


def require_cluster_and_dynamo() -> None:
    require_cluster()
    if not (DYNAMO_PYTHON.exists() and (STAND_IN_MODEL / "tokenizer.json").exists()):
        if os.environ.get("HARNESS_REQUIRE_DYNAMO"):
            pytest.fail(".venv-dynamo is missing and HARNESS_REQUIRE_DYNAMO is set")
        pytest.skip("Dynamo's frontend and mocker are not installed (make dynamo-env)")


def up() -> dict[str, str]:
    r = cluster_script("up", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    return dict(line.split("=", 1) for line in cluster_script("env").stdout.splitlines()
                if "=" in line)


def head(env: dict[str, str], *argv: str, timeout: float = 900,
         **kw) -> subprocess.CompletedProcess[str]:
    """`harness ARGV` on the head node (its namespace, the cluster's Slurm config)."""
    return subprocess.run(head_argv(env, *argv), capture_output=True, text=True,
                          timeout=timeout, **kw)


def head_argv(env: dict[str, str], *argv: str) -> list[str]:
    return ["ip", "netns", "exec", env["HEAD_NS"], "env", f"SLURM_CONF={env['SLURM_CONF']}",
            sys.executable, "-m", "harness.cli.main", *argv]


def slurm(env: dict[str, str], *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", env["HEAD_NS"], "env",
                           f"SLURM_CONF={env['SLURM_CONF']}", *argv], capture_output=True,
                          text=True, timeout=30).stdout


def role(name: str, kind: str, argv: list[str], gpus: int = 0, port: int | None = None,
         instances: int = 1) -> dict:
    out = {"name": name, "role": kind, "instances": instances, "nodes": 1, "gpus": gpus,
           "argv": argv}
    return {**out, "port": port} if port else out


def sglang_worker(mode: str) -> list[str]:
    """A Dynamo SGLang worker as srt-slurm's recipes start it (the stand-in replaces it)."""
    return ["python3", "-m", "dynamo.sglang", "--model-path", "{model}", "--served-model-name",
            "deepseek-ai/DeepSeek-R1", "--disaggregation-mode", mode, "--host", "{host}"]


def user_recipe(config_dir: Path, roles: list[dict], name: str = "mn-1p1d",
                scenario: str = "fixed-1k1k") -> str:
    """A user's own multi-node recipe (--config-dir): one disaggregated row with its deployment."""
    recipe = {
        "defaults": [{"override /model": "deepseek-r1"}, {"override /chip": "b200"},
                     {"override /engine": "multinode"}, {"override /speculator": "none"},
                     {"override /scenarios": scenario}],
        "precision": "fp4",
        "search_space": [{
            "scenario": scenario, "tp": 8, "concurrency": [2],
            "prefill": {"workers": 1, "tp": 4}, "decode": {"workers": 1, "tp": 8},
            "deploy_recipe": "user/1p1d.yaml",
            "deployment": {"source": "a test's own", "gpus_per_node": 8, "nodes": 3,
                           "roles": roles}}],
    }
    (config_dir / "recipe").mkdir(parents=True, exist_ok=True)
    (config_dir / "recipe" / f"{name}.yaml").write_text(
        "# @package _global_\n" + yaml.safe_dump(recipe, sort_keys=False))
    return name


def stand_in_args(results: Path, run_id: str, *extra: str) -> list[str]:
    """What a small stand-in point needs beyond the recipe: the stand-in, its tokenizer for the
    client, no container, and a short fixed-sequence point."""
    return ["engine.slurm.worker_stand_in=dynamo-mocker", "engine.slurm.container_runtime=none",
            f"model.tokenizer={STAND_IN_MODEL}", "engine.startup_timeout_s=120",
            "scenario.isl=256", "scenario.osl=32", "scenario.requests_per_conc=4",
            "scenario.warmup_per_conc=1", f"results_dir={results}", f"run_id={run_id}", *extra]
