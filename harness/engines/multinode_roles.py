"""A captured multi-node deployment placed on an allocation's nodes and rendered per step.

Pure: which nodes each role instance runs on (upstream's own placement where it was captured),
and each step's argv, environment and files with the contract's placeholders filled
(docs/multinode.md, "The launch contract").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.config.schema_catalog import ContainerOptions, Deployment, RoleLaunch

PLACEHOLDERS = ("model", "served_name", "host", "head", "leader", "node_rank", "instance", "port",
                "launch_dir", "devices", "local_rank")
# {node_N} (or {node:N}): allocation node N's address; {vary_N} (or {vary:N}): per step
INDEXED = re.compile(r"^(node|vary)[_:](\d+)$")
ROLES = ("frontend", "router", "prefill", "decode", "aggregated", "etcd", "nats",
         "mooncake-master", "helper")
WORKER_ROLES = ("prefill", "decode", "aggregated")
# a placeholder; `{{` and `}}` are upstream's literal braces ({{job_id}} in captured text)
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(\w+(?::\d+)?)\}")
_LITERAL = {"{{": "{", "}}": "}"}


@dataclass(frozen=True)
class Placement:
    role: RoleLaunch
    instance: int
    nodes: tuple[str, ...]  # the cluster nodes this instance spans, its leader first
    devices: tuple[str, ...] = ()  # per step, upstream's GPUs


@dataclass(frozen=True)
class StepLaunch:
    label: str  # role.instance@node[.rank][.pN], unique in the deployment (the step's name)
    role: str  # the role kind (prefill, decode, frontend, ...)
    name: str  # the role's name in the deployment
    instance: int
    node: str  # where the step starts (the first of `nodes`)
    address: str
    argv: list[str]
    env: dict[str, str]
    files: dict[str, str]
    port: int | None
    ready: str | None
    nodes: tuple[str, ...] = ()  # an MPI step spans all its instance's nodes
    srun: dict[str, Any] = field(default_factory=dict)
    preamble: str | None = None
    env_unset: tuple[str, ...] = ()
    image: str | None = None
    container: ContainerOptions | None = None  # upstream's, its mounts rendered


def vary_keys(role: RoleLaunch) -> dict[str, str]:
    """{placeholder name: role.vary key}: `vary_0` for a key written vary_0 or vary:0."""
    return {name: k for k in role.vary for name in (k, k.replace(":", "_"))}


def unknown_placeholders(role: RoleLaunch) -> list[str]:
    """Placeholders a role names that the launcher does not fill."""
    text = [*role.argv, *role.env.values(), *role.files.values(),
            *(role.container.mounts if role.container else ())]
    named = {m for t in text for m in _PLACEHOLDER.findall(t) if m}
    varied = vary_keys(role)
    return sorted(n for n in named if n not in PLACEHOLDERS and not (
        INDEXED.match(n) and (n.startswith("node") or n in varied)))


def worker_nodes(dep: Deployment) -> int:
    """Nodes the workers take upstream (GPU-less roles share the head node)."""
    return sum(r.instances * r.nodes for r in dep.roles if r.role in WORKER_ROLES)


def nodes_needed(dep: Deployment, max_nodes: int = 0) -> int:
    """Nodes to allocate: upstream's count (at least what its placement names), or at most
    engine.slurm.max_nodes."""
    placed = [i for r in dep.roles for p in r.placement for i in p.nodes]
    need = max(dep.nodes, worker_nodes(dep), max(placed, default=0) + 1, 1)
    return min(need, max_nodes) if max_nodes > 0 else need


def place(dep: Deployment, nodes: list[str]) -> list[Placement]:
    """Upstream's placement where it was captured (node indexes into the allocation). Else the
    workers fill the nodes in order, prefill before decode as captured, starting after the head
    node when the allocation has one more than they take; GPU-less roles run on the head node.
    An index beyond the allocation (engine.slurm.max_nodes) wraps round it: a stand-in run
    packs the deployment onto a small cluster."""
    cursor = 1 if len(nodes) > worker_nodes(dep) else 0
    out: list[Placement] = []
    for role in dep.roles:
        for i in range(role.instances):
            if i < len(role.placement):
                p = role.placement[i]
                span = tuple(nodes[k % len(nodes)] for k in p.nodes)
                out.append(Placement(role, i, span, tuple(p.devices)))
                continue
            if role.role in WORKER_ROLES:
                span = tuple(nodes[(cursor + k) % len(nodes)] for k in range(role.nodes))
                cursor += role.nodes
            else:
                span = (nodes[0],)
            out.append(Placement(role, i, span))
    return out


def render(text: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(
        lambda m: _LITERAL.get(m.group(0)) or values.get(m.group(1), m.group(0)), text)


def steps(dep: Deployment, placements: list[Placement], nodes: list[str],
          addresses: dict[str, str], model: str, served_name: str,
          launch_dir: str) -> list[StepLaunch]:
    """The steps of every placed instance, argv, env and files rendered: one per node and
    process, or one over all the instance's nodes where upstream runs it as one MPI srun."""
    shared = {"model": model, "served_name": served_name, "launch_dir": launch_dir,
              "head": addresses[nodes[0]],
              **{f"node{sep}{i}": addresses[nodes[i % len(nodes)]]
                 for i in range(max(len(nodes), dep.nodes)) for sep in "_:"}}
    out: list[StepLaunch] = []
    for p in placements:
        r = p.role
        per_node = 1 if r.srun.get("ntasks_per_node") else max(1, r.procs_per_node)
        spans = [p.nodes] if r.srun.get("ntasks_per_node") else [(n,) for n in p.nodes]
        for rank, span in enumerate(spans):
            for local in range(per_node):
                step = rank * per_node + local
                values = {**shared, "host": addresses[span[0]], "leader": addresses[p.nodes[0]],
                          "node_rank": str(rank), "instance": str(p.instance),
                          "port": _port(r, p.instance), "local_rank": str(local),
                          "devices": p.devices[step] if step < len(p.devices) else "",
                          **_varied(r, p.instance, step)}
                label = f"{r.name}.{p.instance}@{span[0]}" + (
                    f".{rank}" if len(spans) > 1 else "") + (f".p{local}" if per_node > 1 else "")
                first = step == 0
                out.append(StepLaunch(
                    label=label, role=r.role, name=r.name, instance=p.instance, node=span[0],
                    address=addresses[span[0]], argv=_argv(r.argv, values),
                    env={k: render(v, values) for k, v in r.env.items()},
                    files={render(k, values): render(v, values) for k, v in r.files.items()},
                    port=int(values["port"]) if r.port and first else None,
                    ready=r.ready if first else None, nodes=span, srun=dict(r.srun),
                    preamble=r.preamble, env_unset=tuple(r.env_unset),
                    image=r.image or dep.image, container=_container(r.container, values)))
    return out


def _container(c: ContainerOptions | None, values: dict[str, str]) -> ContainerOptions | None:
    if c is None:
        return None
    return ContainerOptions(runtime=c.runtime, devices=list(c.devices),
                            mounts=[render(m, values) for m in c.mounts],
                            options=list(c.options))


def _argv(argv: list[str], values: dict[str, str]) -> list[str]:
    """Rendered argv; an element that named a placeholder and renders empty is left out
    (upstream passes `--headless` on the nodes after an instance's first alone)."""
    out = []
    for a in argv:
        rendered = render(a, values)
        if rendered or not any(m.group(1) for m in _PLACEHOLDER.finditer(a)):
            out.append(rendered)
    return out


def _varied(role: RoleLaunch, instance: int, step: int) -> dict[str, str]:
    out = {}
    for name, key in vary_keys(role).items():
        table = role.vary[key]
        row = table[instance] if instance < len(table) else []
        out[name] = str(row[step]) if step < len(row) else ""
    return out


def _port(role: RoleLaunch, instance: int) -> str:
    """A role's port for one instance: the captured port, plus the instance's index (two
    instances packed on one node must not share it)."""
    return str(role.port + instance) if role.port else ""
