"""How a role's step runs its image on the cluster's container runtime, with upstream's own
container options (RoleLaunch.container: docker run's devices, mounts and flags, or pyxis's
srun options) where that runtime can take them (docs/multinode.md, "Container options").

- docker: `docker run` inside the srun step, with upstream's devices, mounts and flags, the
  launch directory mounted at its own path as the working directory, and the step's
  environment passed by name (`-e NAME`: docker reads the value from srun's environment, so
  no value is written into an argv);
- pyxis / apptainer: the step as slurm_job.step_argv runs it, with upstream's mounts added to
  engine.slurm.container_mounts (and, for a role upstream started with pyxis, its pyxis
  flags); docker's devices and other flags have no equivalent there;
- none: no container, so no option applies.

Nothing here builds a shell string: the one shell text is slurm_job's SOURCE_THEN_EXEC."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from harness.config.schema_catalog import ContainerOptions, SlurmLaunchConfig
from harness.engines.multinode_roles import StepLaunch
from harness.engines.slurm_job import SOURCE_THEN_EXEC, Allocation, step_argv

DOCKER = "docker"


def container_name(job_id: str, label: str) -> str:
    """A docker container name for one step (docker allows [a-zA-Z0-9][a-zA-Z0-9_.-]*), so a
    leftover one can be found and removed by the job's id, as upstream's cleanup does by
    its $DOCKER_CONT_NAME (amd_utils/job.slurm@843c6254)."""
    return "harness-" + re.sub(r"[^a-zA-Z0-9_.-]", "_", f"{job_id}-{label}")


def mounts(s: StepLaunch, workdir: Path, cfg: SlurmLaunchConfig) -> list[str]:
    """The step's bind mounts, host:container[:opts], the first for each container path: the
    launch directory at its own path, the cluster's (engine.slurm.container_mounts), then
    upstream's."""
    out: dict[str, str] = {}
    upstream = s.container.mounts if s.container else []
    for m in [f"{workdir}:{workdir}", *cfg.container_mounts, *upstream]:
        parts = m.split(":")
        out.setdefault(parts[1] if len(parts) > 1 else parts[0], m)
    return list(out.values())


def docker_run(s: StepLaunch, image: str, workdir: Path, cfg: SlurmLaunchConfig, name: str,
               preamble_file: Path | None = None) -> list[str]:
    """`docker run` of one step's argv in its image, with upstream's container options."""
    c = s.container or ContainerOptions()
    flags = c.options if c.runtime == DOCKER else []
    argv = list(s.argv)
    if preamble_file is not None:
        argv = ["bash", "-c", SOURCE_THEN_EXEC, str(preamble_file), *argv]
    env = [a for k in sorted(s.env) if k not in s.env_unset for a in ("-e", k)]
    return ["docker", "run", *([] if "--rm" in flags else ["--rm"]), f"--name={name}",
            *(f"--device={d}" for d in c.devices),
            *(a for m in mounts(s, workdir, cfg) for a in ("-v", m)),
            f"--workdir={workdir}", *env, *flags, image, *argv]


def launch_argv(alloc: Allocation, s: StepLaunch, workdir: Path, cfg: SlurmLaunchConfig,
                preamble_file: Path | None = None) -> list[str]:
    """srun's argv for one step on the cluster's runtime, upstream's options applied where
    that runtime takes them."""
    nodes = s.nodes or (s.node,)
    if s.image and cfg.container_runtime == DOCKER:
        inner = docker_run(s, s.image, workdir, cfg, container_name(alloc.job_id, s.label),
                           preamble_file)
        return step_argv(alloc, nodes, s.label, inner, workdir, cfg, None, s.srun, None)
    srun = dict(s.srun)
    c = s.container
    if c is not None and s.image and cfg.container_runtime in ("pyxis", "apptainer"):
        cfg = dataclasses.replace(cfg, container_mounts=mounts(s, workdir, cfg)[1:])
        if c.runtime == "pyxis" and cfg.container_runtime == "pyxis":
            srun["srun_options"] = {**pyxis_flags(c.options), **(srun.get("srun_options") or {})}
    return step_argv(alloc, nodes, s.label, s.argv, workdir, cfg, s.image, srun, preamble_file)


def pyxis_flags(options: list[str]) -> dict[str, str]:
    """Upstream's pyxis flags (`--container-remap-root`, `--no-container-entrypoint`,
    `--container-writable`) as slurm_job's srun_options {name: value}."""
    out: dict[str, str] = {}
    for opt in options:
        name, _, value = opt.removeprefix("--").partition("=")
        out[name] = value
    return out


def runtime_note(upstream_runtimes: list[str], runtime: str) -> str | None:
    """The one line a dry run prints where upstream's container options (one entry per role
    that has them: the runtime they are for) do not all apply on the cluster's runtime; None
    where they do, or where there are none."""
    if not upstream_runtimes:
        return None
    kinds = sorted(set(upstream_runtimes))
    said = (f"upstream's container options ({'/'.join(kinds)}) of {len(upstream_runtimes)} "
            "role(s)")
    if runtime == "none":
        return (f"{said} do not apply: engine.slurm.container_runtime=none runs each role on "
                "the node without a container (set it to docker to apply them)")
    if kinds == [runtime]:
        return None
    return (f"{said}: engine.slurm.container_runtime={runtime} applies their mounts"
            + (" and pyxis flags" if runtime == "pyxis" and "pyxis" in kinds else "")
            + "; docker's devices and flags apply only with container_runtime=docker")
