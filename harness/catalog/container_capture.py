"""A role's container options (RoleLaunch.container) from the recording stand-in's record of
the command that started its container: upstream's `docker run` (the AMD chain,
benchmarks/multi_node/amd_utils/job.slurm@843c6254) or `srun --container-image ...` (pyxis).

Typed: devices and mounts apart, every other flag as upstream passed it. Never carried: the
environment flags (-e, --env-file: the role's env is captured from the process itself, and a
credential is never written), the container's name (the launcher names one per step), and the
mounts whose host side is the capture's own (docs/multinode.md, "Container options")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.catalog.multinode_template import NotCaptured

WORKSPACE = "/workspace"  # the sandbox's InferenceX checkout, upstream's $GITHUB_WORKSPACE
ENV_FLAGS = ("-e", "--env", "--env-file")
NAME_FLAGS = ("--name", "-d", "--detach")
MOUNT_FLAGS = ("-v", "--volume", "--mount")
DEVICE_FLAGS = ("--device",)
# pyxis's options that the role's other fields (or the launcher) already carry
PYXIS_CARRIED = ("--container-image", "--container-mounts", "--container-env",
                 "--container-name", "--container-workdir")
# a mount of credentials is never carried into a recipe
CREDENTIAL_TARGETS = ("/root/.ssh", "/root/.aws", "/root/.cache/huggingface/token")
# what upstream mounts for its own benchmark client's sibling container (job.slurm@843c6254
# CLIENT_DOCKER_MOUNTS: the host's docker socket and CLI); the harness runs its own client
CLIENT_TARGETS = ("/var/run/docker.sock", "/usr/bin/docker")


Plumbing = Callable[[str], bool]  # a host path that is the capture's own (a stand-in program)


def mount_of(spec: str, model_host: str, log_root: str, plumbing: Plumbing) -> str | None:
    """One upstream mount as the recipe carries it, or None where it is not carried: the
    model store becomes {model} at its own path (the role's argv names {model}); the log
    root is the launch dir, which the launcher mounts itself; a credential, the checkout
    (InferenceX's scripts, no server reads them; job files such as the HiCache settings that
    env.sh already resolved into the role's env) and the stand-ins' own paths (upstream's
    `$(which nicctl)` mount, made only where the node has the program) are not."""
    parts = spec.split(":")
    host, target = parts[0], parts[1] if len(parts) > 1 else parts[0]
    opts = parts[2:]
    if target in CREDENTIAL_TARGETS or host.endswith("/.ssh") or target in CLIENT_TARGETS:
        return None
    if model_host and (host == model_host or host.startswith(model_host.rstrip("/") + "/")):
        return ":".join(["{model}", "{model}", *opts])
    if log_root and (target == log_root or log_root.startswith(target.rstrip("/") + "/")):
        return None
    if host == WORKSPACE or host.startswith(WORKSPACE + "/"):
        return None
    if plumbing(host):
        return None
    return spec


def docker_options(run: dict[str, Any], model_host: str, log_root: str,
                   plumbing: Plumbing) -> dict[str, Any]:
    """RoleLaunch.container from one recorded `docker run` (standins/slurm_docker.py)."""
    out: dict[str, Any] = {"runtime": "docker", "devices": [], "mounts": [], "options": []}
    for name, value in run["options"]:
        if name in ENV_FLAGS or name in NAME_FLAGS:
            continue
        if name in DEVICE_FLAGS:
            out["devices"].append(value)
        elif name in MOUNT_FLAGS:
            kept = mount_of(value, model_host, log_root, plumbing)
            if kept is not None and kept not in out["mounts"]:
                out["mounts"].append(kept)
        else:
            out["options"] += [name] if value is None else [name, value]
    return out


def pyxis_options(srun: dict[str, Any], model_host: str, log_root: str,
                  plumbing: Plumbing) -> dict[str, Any]:
    """RoleLaunch.container from one recorded `srun --container-image ...` step: its
    --container-mounts (comma-separated) typed, its other pyxis flags as written."""
    out: dict[str, Any] = {"runtime": "pyxis", "devices": [], "mounts": [], "options": []}
    for name, value in srun["options"]:
        if name == "--container-mounts":
            for spec in (value or "").split(","):
                kept = mount_of(spec, model_host, log_root, plumbing) if spec else None
                if kept is not None and kept not in out["mounts"]:
                    out["mounts"].append(kept)
        elif name.startswith(("--container-", "--no-container-")) \
                and name not in PYXIS_CARRIED:
            out["options"].append(name if value is None else f"{name}={value}")
    return out


def same_on_every_node(per_node: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The nodes' container options, which upstream's job gives every node alike; a job that
    gives its nodes different ones is not captured (one role's instances would differ)."""
    distinct = {repr(v) for v in per_node.values()}
    if len(distinct) > 1:
        raise NotCaptured("upstream's container options differ between nodes: "
                          + "; ".join(f"{n}: {v}" for n, v in sorted(per_node.items())))
    return next(iter(per_node.values()))
