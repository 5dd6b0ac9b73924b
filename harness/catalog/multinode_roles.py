"""What srt-slurm's orchestrator started (harness/catalog/multinode_srtdriver.py's JSON) as a
search-space row's `deployment:` block (docs/multinode.md, "Multi-node keys: what is
captured"; the contract with the launcher is the `RoleLaunch` schema plus the importer's
additions listed there).

Every process record is rewritten with the contract's placeholders: the fake node names the
driver's allocation used become {host} (the process's own node), {leader} (its instance's
first node), {head} (the allocation's first node) or {node_N} (allocation node N); the
checkpoint mount (/model) becomes {model}, the served name {served_name}, the log directory
srtctl writes its files into (/logs, mounted from the job's log dir) {launch_dir}. Processes
of one role must then read the same, node rank and instance index aside ({node_rank},
{instance}, {devices}); where instances differ otherwise each instance becomes its own role,
and where one node runs several processes of one instance the row is not captured."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from harness.catalog.multinode_template import (
    Normalizer,
    NotCaptured,
    _idx,
    _template,
    _without_fingerprint,
)

MODE_ROLE = {"prefill": "prefill", "decode": "decode", "agg": "aggregated",
             "aggregated": "aggregated"}


SRUN_KEYS = ("mpi", "oversubscribe", "cpu_bind", "srun_options", "ntasks")


def _process(cap: dict[str, Any], rec: dict[str, Any], own: str, leader: str,
             devices: str) -> dict[str, Any]:
    n = Normalizer(cap, own, leader)
    env = {k: n.text(str(v), k) for k, v in (rec.get("env_to_set") or {}).items()}
    for k, v in env.items():
        if k == "CUDA_VISIBLE_DEVICES" and v == devices:
            env[k] = "{devices}"
    srun = {k: rec[k] for k in SRUN_KEYS if rec.get(k) not in (None, False, {}, 1)}
    if "ntasks" in srun:
        srun["ntasks_per_node"] = int(srun.pop("ntasks")) // max(1, len(rec["nodelist"]))
    return {"argv": n.argv(rec["command"]), "env": env,
            "preamble": n.text(_without_fingerprint(rec.get("bash_preamble") or "")),
            "env_unset": list(rec.get("env_to_unset") or []),
            "image": str(rec.get("container_image") or ""), "srun": srun}


def _worker_instances(cap: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """mode -> instances in index order: {index, nodes, gpus, procs, keys}, the processes in
    (node rank, local rank) order."""
    by_inst: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for rec in cap["records"]:
        c = rec["context"]
        if c.get("stage") == "worker":
            by_inst[(c["mode"], int(c["index"]))].append(rec)
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    order = list(dict.fromkeys(m for m, _ in by_inst))  # modes in srtctl's start order
    for (mode, index), recs in sorted(by_inst.items(),
                                      key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
        nodes = list(recs[0]["context"]["endpoint_nodes"])
        seen: dict[str, int] = defaultdict(int)
        rows = []
        for r in recs:
            own = r["nodelist"][0]
            gpus = r["context"].get("proc_gpus") or r["context"]["gpus"]
            devices = ",".join(str(g) for g in gpus)
            key = {"node_rank": nodes.index(own), "local_rank": seen[own], "instance": index}
            seen[own] += 1
            n_gpus = len(gpus) * (len(r["nodelist"]) if len(r["nodelist"]) > 1 else 1)
            rows.append((key, _process(cap, r, own, nodes[0], devices), devices, n_gpus))
        per_node = set(seen.values())
        spans = len(recs) == 1 and len(recs[0]["nodelist"]) > 1  # one MPI srun over all
        if not spans and (len(per_node) != 1 or set(seen) != set(nodes)):
            raise NotCaptured(f"{mode} worker {index}: an uneven number of processes per node")
        rows.sort(key=lambda t: (t[0]["node_rank"], t[0]["local_rank"]))
        out[mode].append({"index": index, "nodes": nodes, "procs_per_node": per_node.pop(),
                          "gpus": sum(t[3] for t in rows), "keys": [t[0] for t in rows],
                          "procs": [t[1] for t in rows], "devices": [t[2] for t in rows]})
    return out


def _role(name: str, kind: str, insts: list[dict[str, Any]], cap: dict[str, Any],
          where: str) -> dict[str, Any]:
    procs = [p for i in insts for p in i["procs"]]
    keys = [k for i in insts for k in i["keys"]]
    t, vary = _template(procs, keys, where)
    per = len(insts[0]["procs"])
    role: dict[str, Any] = {
        "name": name, "role": kind, "instances": len(insts), "nodes": len(insts[0]["nodes"]),
        "gpus": insts[0]["gpus"], "argv": t["argv"], "env": t["env"],
        "placement": [{"nodes": [_idx(n) for n in i["nodes"]], "devices": i["devices"]}
                      if i["devices"] and any(i["devices"]) else
                      {"nodes": [_idx(n) for n in i["nodes"]]} for i in insts]}
    if insts[0]["procs_per_node"] > 1:
        role["procs_per_node"] = insts[0]["procs_per_node"]
    if vary:
        role["vary"] = {k: [v[j:j + per] for j in range(0, len(v), per)]
                        for k, v in vary.items()}
    if t["preamble"]:
        role["preamble"] = t["preamble"]
    if t["env_unset"]:
        role["env_unset"] = t["env_unset"]
    if t["srun"]:
        role["srun"] = t["srun"]
    if t["image"] and t["image"] != cap["container_image"]:
        role["image"] = t["image"]
    return role


def worker_roles(cap: dict[str, Any]) -> list[dict[str, Any]]:
    """One role per worker mode; instances of different shapes (nodes, GPUs, processes a
    node) one role each."""
    roles: list[dict[str, Any]] = []
    for mode, insts in _worker_instances(cap).items():
        kind = MODE_ROLE.get(mode)
        if kind is None:
            raise NotCaptured(f"srt-slurm worker mode {mode!r} has no contract role")
        shapes: dict[tuple, list[dict]] = defaultdict(list)
        for i in insts:
            shapes[(len(i["nodes"]), i["gpus"], i["procs_per_node"])].append(i)
        for group in shapes.values():
            name = kind if len(shapes) == 1 else f"{kind}-{group[0]['index']}"
            roles.append(_role(name, kind, group, cap, f"{mode} workers"))
    return roles


def _single(cap: dict[str, Any], name: str, kind: str, recs: list[dict[str, Any]],
            port: int | None = None, ready: str | None = None) -> dict[str, Any]:
    """A GPU-less role: one instance per record, each on the node srtctl put it on."""
    insts = [{"index": i, "nodes": [r["nodelist"][0]], "gpus": 0, "procs_per_node": 1,
              "keys": [{"node_rank": 0, "local_rank": 0, "instance": i}], "devices": [""],
              "procs": [_process(cap, r, r["nodelist"][0], r["nodelist"][0], "")]}
             for i, r in enumerate(recs)]
    role = _role(name, kind, insts, cap, name)
    if port:
        role["port"] = port
    if ready:
        role["ready"] = ready
    return role


def _port_of(argv: list[str]) -> int | None:
    for i, a in enumerate(argv):
        for flag in ("--http-port", "--port"):
            if a.startswith(flag + "="):
                return int(a.split("=", 1)[1])
            if a == flag and i + 1 < len(argv) and argv[i + 1].isdigit():
                return int(argv[i + 1])
    return None


def helper_roles(cap: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """(helpers started before the workers, frontend roles started after them)."""
    before: list[dict[str, Any]] = []
    infra = [r for r in cap["records"] if r["context"].get("stage") == "infra"]
    for svc in cap.get("services") or []:
        rec = {"command": svc["command"], "nodelist": infra[0]["nodelist"],
               "container_image": infra[0].get("container_image")}
        role = _single(cap, svc["service"], svc["service"], [rec])
        for path, content in (svc.get("files") or {}).items():
            # setup_head.py writes the file (nats.conf for a larger max payload) in the
            # container before starting the service: here it is written into the launch dir
            # and the argv names it there
            name = path.rsplit("/", 1)[-1]
            role["argv"] = [a.replace(path, "{launch_dir}/" + name) for a in role["argv"]]
            role.setdefault("files", {})[name] = content
        before.append(role)
    moon = [r for r in cap["records"] if r["context"].get("stage") == "mooncake"]
    if moon:
        before.append(_single(cap, "mooncake-master", "mooncake-master", moon))
    after: list[dict[str, Any]] = []
    fronts = [r for r in cap["records"] if r["context"].get("stage") == "frontend"]
    nginx = [r for r in fronts if "nginx" in " ".join(r["command"][:3])]
    others = [r for r in fronts if r not in nginx]
    if others:
        port = _port_of(others[0]["command"])
        public = not nginx
        after.append(_single(cap, "frontend", "frontend", others, port,
                             "/health" if public else None))
    if nginx:
        role = _single(cap, "nginx", "router", nginx, 8000, "/health")
        m = re.search(r"listen\s+(\d+)", cap.get("files", {}).get("nginx.conf", ""))
        role["port"] = int(m.group(1)) if m else 8000
        after.append(role)
    return before, after


def _attach_files(cap: dict[str, Any], roles: list[dict[str, Any]]) -> None:
    """Files srtctl wrote into the job's log dir before starting a role (nginx.conf, a
    Mooncake store config) go with each role whose text names them, their node names as
    allocation nodes ({head}, {node_N})."""
    anywhere = Normalizer(cap, "", "")
    for name, content in sorted((cap.get("files") or {}).items()):
        ref = "{launch_dir}/" + name
        for role in roles:
            text = " ".join([*role["argv"], *role["env"].values(), role.get("preamble", "")])
            if ref in text:
                role.setdefault("files", {})[name] = anywhere.text(content)


OURS = {"model", "served_name", "host", "head", "leader", "node_rank", "instance", "port",
        "launch_dir", "devices", "local_rank"}


def _ours(name: str) -> bool:
    return name in OURS or re.fullmatch(r"(node|vary)_\d+", name) is not None


def escape_foreign(value: Any) -> Any:
    """Upstream's own `{name}` text that is no placeholder of ours (a recipe env value srtctl
    passes on unformatted, `/tmp/dg-cache-{job_id}`) written `{{name}}`: the launcher renders
    `{{`/`}}` as literal braces. Shell's `${VAR}` is left as it is."""
    if isinstance(value, str):
        return re.sub(r"(?<![${])\{(\w+)\}(?!\})",
                      lambda m: m.group(0) if _ours(m.group(1)) else "{{" + m.group(1) + "}}",
                      value)
    if isinstance(value, list):
        return [escape_foreign(v) for v in value]
    if isinstance(value, dict):
        return {k: escape_foreign(v) for k, v in value.items()}
    return value


def serving_port(roles: list[dict[str, Any]]) -> None:
    """With no frontend or router (srtctl's `frontend.type: vllm` serves straight from the
    worker), the worker role whose first step passes `--port N` serves the HTTP API: its
    `port` and `ready` are set from that first step."""
    if any(r["role"] in ("frontend", "router") for r in roles):
        return
    for r in roles:
        if r["role"] not in ("aggregated", "prefill", "decode"):
            continue
        argv = [tok if not re.fullmatch(r"\{vary_\d+\}", tok)
                else r["vary"][tok[1:-1]][0][0] for tok in r["argv"]]
        argv = [a for a in argv if a != ""]
        port = _port_of(argv)
        if port:
            r["port"], r["ready"] = port, "/health"
            return


def deployment(cap: dict[str, Any], source: str) -> dict[str, Any]:
    """The row's `deployment:` block from one driver capture."""
    workers = worker_roles(cap)
    before, after = helper_roles(cap)
    _attach_files(cap, [*before, *workers, *after])
    serving_port([*before, *workers, *after])
    dep = {"source": source, "image": cap["container_image"] or None,
           "gpus_per_node": int(cap["gpus_per_node"]), "nodes": int(cap["nodes"]),
           "roles": escape_foreign([*before, *workers, *after])}
    leaked = re.findall(r"/[^\s'\"]*mn-capture-[^\s'\"]*|srtnode\d{3}", repr(dep))
    if leaked:
        raise NotCaptured(f"a path or node of the capture's sandbox is left in the text: "
                          f"{sorted(set(leaked))[:3]}")
    return dep
