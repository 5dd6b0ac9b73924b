"""A captured multi-node deployment placed on an allocation's nodes and rendered per step.

Pure: which node each role instance runs on, and each step's argv and environment with the
contract's placeholders filled (docs/multinode.md, "The launch contract").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.config.schema_catalog import Deployment, RoleLaunch

PLACEHOLDERS = ("model", "served_name", "host", "head", "leader", "node_rank", "instance", "port",
                "launch_dir")
ROLES = ("frontend", "router", "prefill", "decode", "aggregated", "etcd", "nats",
         "mooncake-master", "helper")
WORKER_ROLES = ("prefill", "decode", "aggregated")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Placement:
    role: RoleLaunch
    instance: int
    nodes: tuple[str, ...]  # the cluster nodes this instance spans, its leader first


@dataclass(frozen=True)
class StepLaunch:
    label: str  # role.instance@node, unique in the deployment (the step's name)
    role: str  # the role kind (prefill, decode, frontend, ...)
    name: str  # the role's name in the deployment
    instance: int
    node: str
    address: str
    argv: list[str]
    env: dict[str, str]
    files: dict[str, str]
    port: int | None
    ready: str | None


def unknown_placeholders(role: RoleLaunch) -> list[str]:
    """Placeholders a role names that the launcher does not fill."""
    text = [*role.argv, *role.env.values(), *role.files.values()]
    return sorted({m for t in text for m in _PLACEHOLDER.findall(t)} - set(PLACEHOLDERS))


def worker_nodes(dep: Deployment) -> int:
    """Nodes the workers take upstream (GPU-less roles share the head node)."""
    return sum(r.instances * r.nodes for r in dep.roles if r.role in WORKER_ROLES)


def nodes_needed(dep: Deployment, max_nodes: int = 0) -> int:
    """Nodes to allocate: upstream's count (at least the workers'), or at most max_nodes."""
    need = max(dep.nodes, worker_nodes(dep), 1)
    return min(need, max_nodes) if max_nodes > 0 else need


def place(dep: Deployment, nodes: list[str]) -> list[Placement]:
    """Workers fill the nodes in order, prefill before decode as captured; when the allocation
    has a node beyond what the workers take, the workers start after the head node, so the
    frontend and the client have it. GPU-less roles (frontend, router, etcd, NATS, a Mooncake
    master) run on the head node. More nodes needed than allocated (engine.slurm.max_nodes)
    wrap round the allocation: a stand-in run packs the deployment onto a small cluster."""
    first = 1 if len(nodes) > worker_nodes(dep) else 0
    cursor = first
    out: list[Placement] = []
    for role in dep.roles:
        for i in range(role.instances):
            if role.role in WORKER_ROLES:
                span = tuple(nodes[(cursor + k) % len(nodes)] for k in range(role.nodes))
                cursor += role.nodes
            else:
                span = (nodes[0],)
            out.append(Placement(role, i, span))
    return out


def render(text: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def steps(dep: Deployment, placements: list[Placement], addresses: dict[str, str],
          model: str, served_name: str, launch_dir: str) -> list[StepLaunch]:
    """One step per node of each placed instance, its argv, env and files rendered."""
    head = addresses[placements[0].nodes[0]] if placements else ""
    head = addresses.get(_head_node(placements), head)
    out: list[StepLaunch] = []
    for p in placements:
        r = p.role
        for rank, node in enumerate(p.nodes):
            values = {"model": model, "served_name": served_name, "host": addresses[node],
                      "head": head, "leader": addresses[p.nodes[0]], "node_rank": str(rank),
                      "instance": str(p.instance), "port": _port(r, p.instance),
                      "launch_dir": launch_dir}
            out.append(StepLaunch(
                label=f"{r.name}.{p.instance}@{node}" + (f".{rank}" if len(p.nodes) > 1 else ""),
                role=r.role, name=r.name, instance=p.instance, node=node,
                address=addresses[node],
                argv=[render(a, values) for a in r.argv],
                env={k: render(v, values) for k, v in r.env.items()},
                files={render(k, values): render(v, values) for k, v in r.files.items()},
                port=int(values["port"]) if r.port and rank == 0 else None,
                ready=r.ready if rank == 0 else None))
    return out


def _port(role: RoleLaunch, instance: int) -> str:
    """A role's port for one instance: the captured port, plus the instance's index (two
    instances packed on one node must not share it)."""
    return str(role.port + instance) if role.port else ""


def _head_node(placements: list[Placement]) -> str:
    """The node the GPU-less roles run on (the allocation's first)."""
    for p in placements:
        if p.role.role not in WORKER_ROLES:
            return p.nodes[0]
    return placements[0].nodes[0] if placements else ""


def roles_summary(placements: list[Placement], stand_in: bool) -> dict[str, dict]:
    """role -> {count, nodes, gpus} for the point: the GPUs upstream's role takes (a stand-in
    takes none, but the point keeps the deployment's identity and its per-GPU figures)."""
    out: dict[str, dict] = {}
    for p in placements:
        entry = out.setdefault(p.role.role, {"count": 0, "nodes": [], "gpus": 0})
        entry["count"] += 1
        entry["gpus"] += p.role.gpus
        entry["nodes"] = sorted({*entry["nodes"], *p.nodes})
    if stand_in:
        for name, entry in out.items():
            entry["stand_in"] = name in WORKER_ROLES
    return out
