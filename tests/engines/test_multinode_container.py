"""A role's container options (RoleLaunch.container) in the argv the Slurm launch starts
(harness/engines/multinode_container.py): upstream's `docker run` devices, mounts and flags
under engine.slurm.container_runtime=docker, the mounts alone under pyxis, nothing under none;
the shipped AMD recipe's row rendered through the launcher's own placement and steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.config.schema_catalog import Deployment, SlurmLaunchConfig
from harness.engines import multinode_roles as roles
from harness.engines.multinode_container import container_name, launch_argv, runtime_note
from harness.engines.slurm_job import SOURCE_THEN_EXEC, Allocation
from tests.helpers import shipped_yaml

ROOT = Path(__file__).resolve().parents[2]
KEY = "dsr1-fp4-mi355x-sglang-disagg"
MODEL = "/models/store/DeepSeek-R1-0528-MXFP4-v2"
WORKDIR = Path("/shared/run/launch/l1")


def _steps() -> tuple[Allocation, list[roles.StepLaunch]]:
    raw = shipped_yaml(ROOT / f"recipes/recipe/multinode/{KEY}.yaml")
    block = raw["search_space"][0]["deployment"]
    dep = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Deployment), block))
    nodes = ["n1", "n2"]
    alloc = Allocation("77", nodes, {"n1": "10.0.0.1", "n2": "10.0.0.2"}, owned=False)
    steps = roles.steps(dep, roles.place(dep, nodes), nodes, alloc.addresses, MODEL, "served",
                        str(WORKDIR))
    return alloc, steps


def _docker_part(argv: list[str]) -> list[str]:
    return argv[argv.index("docker"):]


def test_docker_runs_each_step_with_upstreams_devices_mounts_and_flags() -> None:
    alloc, steps = _steps()
    cfg = SlurmLaunchConfig(container_runtime="docker", container_mounts=["/data:/data"])
    prefill = next(s for s in steps if s.role == "prefill")
    argv = launch_argv(alloc, prefill, WORKDIR, cfg, WORKDIR / "p.preamble.sh")
    assert argv[0] == "srun" and "--jobid=77" in argv and "--nodelist=n1" in argv
    assert not any(a.startswith("--container-") for a in argv)
    d = _docker_part(argv)
    assert d[:3] == ["docker", "run", "--rm"]
    assert f"--name={container_name('77', prefill.label)}" in d
    assert "--device=/dev/kfd" in d and "--device=/dev/dri" in d
    mounts = [d[i + 1] for i, a in enumerate(d) if a == "-v"]
    # the launch dir first, the cluster's, then upstream's (/sys, the model at its own path)
    assert mounts == [f"{WORKDIR}:{WORKDIR}", "/data:/data", "/sys:/sys", f"{MODEL}:{MODEL}"]
    assert f"--workdir={WORKDIR}" in d
    for name, value in (("--ipc", "host"), ("--network", "host"), ("--shm-size", "128G")):
        assert d[d.index(name) + 1] == value
    assert "--privileged" in d
    # the environment goes by name: docker reads each value from srun's environment
    envs = [d[i + 1] for i, a in enumerate(d) if a == "-e"]
    assert sorted(envs) == sorted(prefill.env) and all("=" not in e for e in envs)
    image = d.index(prefill.image)
    assert d[image + 1:image + 5] == ["bash", "-c", SOURCE_THEN_EXEC,
                                      str(WORKDIR / "p.preamble.sh")]
    assert d[image + 5:] == prefill.argv and MODEL in prefill.argv
    assert all(flag in d[:image] for flag in ("--init", "--entrypoint"))


def test_pyxis_takes_upstreams_mounts_and_none_runs_no_container() -> None:
    alloc, steps = _steps()
    router = next(s for s in steps if s.role == "router")
    pyxis = launch_argv(alloc, router, WORKDIR, SlurmLaunchConfig(container_runtime="pyxis"))
    mounts = next(a for a in pyxis if a.startswith("--container-mounts="))
    assert mounts == f"--container-mounts={WORKDIR}:{WORKDIR},/sys:/sys,{MODEL}:{MODEL}"
    assert "docker" not in pyxis and "--privileged" not in pyxis
    assert pyxis[-len(router.argv):] == router.argv
    plain = launch_argv(alloc, router, WORKDIR, SlurmLaunchConfig(container_runtime="none"))
    assert plain[-len(router.argv):] == router.argv
    assert not {"docker", "--privileged"} & set(plain)
    assert not any(a.startswith("--container") for a in plain)


@pytest.mark.parametrize(("runtime", "says"), [
    ("none", "do not apply: engine.slurm.container_runtime=none"),
    ("pyxis", "applies their mounts; docker's devices and flags apply only with"),
    ("docker", None)])
def test_the_dry_run_note_says_where_the_options_do_not_apply(runtime, says) -> None:
    note = runtime_note(["docker"] * 3, runtime)
    assert (note is None) if says is None else (says in note and "3 role(s)" in note)
    assert runtime_note([], "none") is None


@pytest.mark.slow  # one CLI composition of a shipped recipe
def test_the_dry_run_shows_the_options_and_says_once_where_they_do_not_apply(tmp_path) -> None:
    import subprocess
    import sys

    out = tmp_path / "results"
    p = subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep",
                        f"recipe=multinode/{KEY}", "engine.slurm.container_runtime=none",
                        f"results_dir={out}", "--dry-run"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert text.count("note: upstream's container options (docker)") == 1
    assert "do not apply: engine.slurm.container_runtime=none" in text
    assert text.count("\n[") >= 2  # several launches, the note still once
    for line in ("      container (docker) devices: /dev/dri /dev/kfd /dev/infiniband ",
                 "      container (docker) mounts: /sys:/sys {model}:{model}\n",
                 "      container (docker) flags: --init --stop-timeout 10"):
        assert line in text, line
    assert "--privileged" in text and not out.exists()
