"""A GPU-free stand-in for a multi-node deployment's workers (engine.slurm.worker_stand_in).

dynamo-mocker: each prefill, decode or aggregated worker becomes NVIDIA Dynamo's own mocker
(`python -m dynamo.mocker`, ai-dynamo), which registers with the frontend as that worker would
and simulates its timing and KV cache; the frontend is upstream's own `dynamo.frontend` with
upstream's flags. Discovery goes through a directory every node sees and the request and event
planes over TCP and ZMQ, so etcd and NATS roles are left out. Everything binds the node's own
address (Dynamo's event-plane sockets listen on every address of their node: on the local
cluster that is the node's namespace alone). What the mocker simulates and what it does not:
docs/multinode.md.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.config.schema_catalog import Deployment, InstancePlacement, RoleLaunch
from harness.engines.multinode_roles import WORKER_ROLES

STAND_INS = ("dynamo-mocker",)
# Dynamo's planes without etcd or NATS (ai-dynamo 1.6.1 dynamo/frontend/frontend_args.py
# --discovery-backend, --request-plane, --event-plane; the mocker takes the same flags)
PLANES = ["--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]
DROPPED = ("etcd", "nats", "mooncake-master")  # file discovery, TCP/ZMQ planes; no KV store
# Each worker's system server (health and /metrics): DYN_SYSTEM_PORT, per role kind a base
# port, plus the instance's index (harness/engines/multinode_roles.py)
SYSTEM_PORT = {"prefill": 18100, "decode": 18200, "aggregated": 18300}


def repo_path(p: str) -> Path:
    """A path from the recipe: relative ones from the current directory when there, else from
    the checkout or installed copy (harness/config/locations.py)."""
    from harness.config.locations import data_path

    return data_path(p)


def default_model_dir() -> Path:
    """The tokenizer and config the mocker loads when engine.slurm.stand_in_model is unset."""
    return repo_path(".venv-dynamo/model/smollm2")  # harness/testing/dynamo_env.sh makes it


def stand_in_deployment(sc: SweepConfig, dep: Deployment, where) -> Deployment:
    """`dep` with its workers replaced by the stand-in; refusals name the setting and fix."""
    cfg = sc.engine.slurm
    python = repo_path(cfg.stand_in_python)
    if not python.exists():
        raise ConfigError.at(where, "engine.slurm.stand_in_python",
                             f"{python} does not exist: the stand-in runs Dynamo's mocker from it",
                             "run `make dynamo-env` (installs ai-dynamo into .venv-dynamo), or "
                             "point engine.slurm.stand_in_python at a Python with ai-dynamo")
    model = repo_path(cfg.stand_in_model) if cfg.stand_in_model else default_model_dir()
    if not (model / "tokenizer.json").exists() and not (model / "tokenizer_config.json").exists():
        raise ConfigError.at(where, "engine.slurm.stand_in_model",
                             f"{model} holds no tokenizer (tokenizer.json) for the mocker",
                             "set engine.slurm.stand_in_model to a local model directory with its "
                             "tokenizer and config.json")
    if not any(r.role == "frontend" for r in dep.roles):
        raise ConfigError.at(where, "engine.slurm.worker_stand_in",
                             "this deployment has no Dynamo frontend (its workers serve HTTP "
                             "themselves); the mocker serves no HTTP of its own",
                             "run this row on GPUs without a stand-in, or pick a row with a "
                             "dynamo.frontend role")
    discovery = cfg.discovery_dir or "{launch_dir}/discovery"
    env = {"DYN_FILE_KV": discovery}
    block = _block_size(dep)
    nice = ["nice", "-n", str(cfg.stand_in_nice)] if cfg.stand_in_nice is not None else []
    out: list[RoleLaunch] = []
    for r in dep.roles:
        if r.role in DROPPED:
            continue
        if r.role in WORKER_ROLES:
            out.append(_mocker(r, str(python), str(model), env, block))
        elif r.role == "frontend":
            out.append(_frontend(r, str(python), env))
        elif _program(r) and shutil.which(_program(r)):  # upstream's own (nginx), on the node
            out.append(dataclasses.replace(r, image=None, srun={}, preamble=None))
        else:
            raise ConfigError.at(where, "engine.slurm.worker_stand_in",
                                 f"the deployment's {r.role} role ({r.name}) runs "
                                 f"{_program(r) or r.argv[:1]}, which is not installed here "
                                 "(the stand-in replaces Dynamo's workers only)",
                                 f"install {_program(r)} on the nodes (nginx: apt-get install "
                                 "nginx-light), run this key on GPUs, or attach to it")
    out = [dataclasses.replace(r, argv=[*nice, *r.argv]) for r in out]
    return Deployment(source=f"{dep.source} [workers: {cfg.worker_stand_in}]", image=None,
                      gpus_per_node=dep.gpus_per_node, nodes=dep.nodes, roles=out)


def _program(r: RoleLaunch) -> str:
    """The program a role runs: argv[0], or the first word of upstream's `bash -c TEXT`."""
    if r.argv[:2] in (["bash", "-c"], ["sh", "-c"]) and len(r.argv) > 2:
        return r.argv[2].split()[0] if r.argv[2].split() else ""
    return r.argv[0] if r.argv else ""


def _block_size(dep: Deployment) -> list[str]:
    """The frontend's KV block size, which its router hashes by: the mocker's must match."""
    for r in dep.roles:
        if r.role == "frontend":
            for i, a in enumerate(r.argv):
                if a == "--kv-cache-block-size" and i + 1 < len(r.argv):
                    return ["--block-size", r.argv[i + 1]]
                if a.startswith("--kv-cache-block-size="):
                    return ["--block-size", a.split("=", 1)[1]]
    return []


def _mocker(r: RoleLaunch, python: str, model: str, env: dict[str, str],
            block: list[str]) -> RoleLaunch:
    """One mocker per instance, on the instance's first node as upstream places it; what
    only a real worker needs (GPUs per step, per-step ports, its install preamble, MPI) goes."""
    mode = ["--disaggregation-mode", r.role] if r.role in ("prefill", "decode") else []
    argv = [python, "-m", "dynamo.mocker", "--model-path", model, "--model-name",
            "{served_name}", *mode, *block, *PLANES]
    # /health answers 200 once the worker serves its generate endpoint (registered), not
    # merely once the process is up (Dynamo's system status server, DYN_SYSTEM_*)
    worker_env = {**env, "DYN_SYSTEM_PORT": "{port}", "DYN_SYSTEM_HOST": "{host}",
                  "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS": '["generate"]',
                  "DYN_TCP_RPC_HOST": "{host}", "DYN_EVENT_PLANE_HOST": "{host}"}
    placement = [InstancePlacement(nodes=p.nodes[:1]) for p in r.placement]
    return dataclasses.replace(r, argv=argv, env=worker_env, files={}, nodes=1,
                               port=SYSTEM_PORT[r.role], ready="/health", placement=placement,
                               procs_per_node=1, vary={}, preamble=None, env_unset=[], srun={},
                               image=None)


def _frontend(r: RoleLaunch, python: str, env: dict[str, str]) -> RoleLaunch:
    """Upstream's frontend flags kept, run from the stand-in's interpreter, bound to the node."""
    argv = list(r.argv)
    if "dynamo.frontend" not in argv:
        raise ValueError(f"role {r.name}: not dynamo.frontend ({argv[:4]})")
    flags = argv[argv.index("dynamo.frontend") + 1:]
    for planed in ("--discovery-backend", "--request-plane", "--event-plane", "--http-host"):
        while planed in flags:
            i = flags.index(planed)
            del flags[i:i + 2]
    argv = [python, "-m", "dynamo.frontend", *flags, "--http-host", "{host}", *PLANES]
    env = {**r.env, **env, "DYN_TCP_RESPONSE_STREAM_HOST": "{host}"}
    for upstream_only in ("ETCD_ENDPOINTS", "NATS_SERVER", "DYN_REQUEST_PLANE",
                          "DYN_DISCOVERY_BACKEND"):  # the planes are the stand-in's own
        env.pop(upstream_only, None)
    return dataclasses.replace(r, argv=argv, env=env, preamble=None, srun={},
                               image=None, env_unset=[])
