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

import difflib
import re
from collections import defaultdict
from typing import Any

NODE = re.compile(r"srtnode(\d{3})")
# Ports of the services srtctl runs on its infra node (srtctl/ports.py): a node name before
# one of them names the infra node, whatever process writes it.
INFRA_PORTS = ("2379", "2380", "4222", "8700", "8701", "8702")
INFRA_ENV = ("ETCD_ENDPOINTS", "NATS_SERVER", "HEAD_NODE_IP")
MODE_ROLE = {"prefill": "prefill", "decode": "decode", "agg": "aggregated",
             "aggregated": "aggregated"}


class NotCaptured(ValueError):
    """A row whose launch the contract cannot carry, with the reason."""


def _idx(name: str) -> int:
    return int(NODE.fullmatch(name).group(1))


class Normalizer:
    """Rewrites one process's text for its node, its instance's leader and the infra node."""

    def __init__(self, cap: dict[str, Any], own: str, leader: str):
        self.own, self.leader = own, leader
        self.infra = cap["infra"]
        self.model_host = cap["model_path"]
        self.log_dir = cap.get("log_dir", "")

    def node(self, name: str, infra_context: bool) -> str:
        i = _idx(name)
        if infra_context and name == self.infra:
            return "{head}" if i == 0 else f"{{node_{i}}}"
        if name == self.own:
            return "{host}"
        if name == self.leader:
            return "{leader}"
        return "{head}" if i == 0 else f"{{node_{i}}}"

    def text(self, s: str, key: str = "") -> str:
        if self.log_dir:
            s = s.replace(self.log_dir, "{launch_dir}")
        s = re.sub(r"(?<![\w.{}-])/logs(?=/|$|\s|')", "{launch_dir}", s)
        if self.model_host:
            s = s.replace(self.model_host, "{model}")
        s = re.sub(r"(?<![\w.{}-])/model(?=/|$|\s|'|\")", "{model}", s)

        def sub(m: re.Match) -> str:
            after = s[m.end():m.end() + 5]
            infra = key in INFRA_ENV or any(after == ":" + p for p in INFRA_PORTS)
            return self.node(m.group(0), infra)

        return NODE.sub(sub, s)

    def argv(self, argv: list[str]) -> list[str]:
        out = [self.text(a) for a in argv]
        for flag in ("--served-model-name",):
            for i, a in enumerate(out[:-1]):
                if a == flag:
                    out[i + 1] = "{served_name}"
            out = [f"{flag}={{served_name}}" if a.startswith(flag + "=") else a for a in out]
        return out


def _same_shape(tokens: list[str]) -> list[list[str]] | None:
    parts = [re.split(r"(\{\w+\}|\d+)", t) for t in tokens]  # placeholders stay whole
    n = len(parts[0])
    if any(len(p) != n for p in parts):
        return None
    for j in range(0, n, 2):  # the non-digit runs must agree
        if any(p[j] != parts[0][j] for p in parts):
            return None
    return parts


def _token(col: list[str], keys: list[dict[str, int]], vary: dict[str, list]) -> str:
    """One template token from the same token of every process: as it is where all agree,
    else its differing digit runs as {node_rank} / {local_rank} / {instance} where they read
    so, else the whole token a {vary_N} with its value per process."""
    if all(c == col[0] for c in col):
        return col[0]
    parts = _same_shape(col)
    if parts is not None:
        out, ok = [], True
        for j, run in enumerate(parts[0]):
            runs = [p[j] for p in parts]
            if j % 2 == 0 or all(r == run for r in runs):
                out.append(run)
                continue
            if any(r.startswith("{") for r in runs):
                ok = False
                break
            for name in ("node_rank", "local_rank", "instance"):
                if all(r == str(k[name]) for r, k in zip(runs, keys, strict=True)):
                    out.append("{" + name + "}")
                    break
            else:
                ok = False
                break
        if ok:
            return "".join(out)
    # an instance's first node reads {host} in its own text and {leader} in its other
    # nodes': where that is the only difference the token is the leader's
    as_leader = [c.replace("{host}", "{leader}") if k["node_rank"] == 0 else c
                 for c, k in zip(col, keys, strict=True)]
    if all(c == as_leader[0] for c in as_leader) and any(k["node_rank"] for k in keys):
        return as_leader[0]
    name = f"vary_{len(vary)}"
    vary[name] = list(col)
    return "{" + name + "}"


def _aligned(argvs: list[list[str]]) -> list[list[str]]:
    """The argv lists padded to one length: a token only some processes pass (vLLM's
    `--headless` on an instance's other nodes) is "" where it is absent (left out when
    rendered). Whatever the alignment, each process's own argv reads back exactly."""
    ref = list(argvs[0])
    rows = [list(argvs[0])]
    for argv in argvs[1:]:
        new_ref: list[str] = []
        new_rows: list[list[str]] = [[] for _ in rows]
        mine: list[str] = []
        for _op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ref, b=argv, autojunk=False
                                                           ).get_opcodes():
            width = max(i2 - i1, j2 - j1)
            new_ref += ref[i1:i2] + argv[j1 + (i2 - i1):j2]
            for old, new in zip(rows, new_rows, strict=True):
                new += old[i1:i2] + [""] * (width - (i2 - i1))
            mine += argv[j1:j2] + [""] * (width - (j2 - j1))
        ref, rows = new_ref, [*new_rows, mine]
    return rows


def _template(procs: list[dict[str, Any]], keys: list[dict[str, int]], where: str
              ) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The role's one launch from all its processes, and the values of each {vary_N} per
    process (in `keys` order)."""
    if any("" in p["argv"] for p in procs):
        raise NotCaptured(f"{where}: an empty argument in its argv (the contract leaves "
                          "empty elements out)")
    argvs = _aligned([p["argv"] for p in procs])
    procs = [{**p, "argv": a} for p, a in zip(procs, argvs, strict=True)]
    first = procs[0]
    for p, k in zip(procs[1:], keys[1:], strict=True):
        for what, a, b in (("argv length", len(p["argv"]), len(first["argv"])),
                           ("env names", sorted(p["env"]), sorted(first["env"])),
                           ("unset env", p["env_unset"], first["env_unset"]),
                           ("image", p["image"], first["image"]),
                           ("srun options", p["srun"], first["srun"])):
            if a != b:
                extra = ""
                if what == "env names":
                    extra = f" ({sorted(set(a) ^ set(b))})"
                raise NotCaptured(f"{where}: instance {k['instance']} node {k['node_rank']} "
                                  f"differs from the first in its {what}{extra}")
    vary: dict[str, list[str]] = {}
    argv = [_token([p["argv"][i] for p in procs], keys, vary)
            for i in range(len(first["argv"]))]
    env = {k: _token([p["env"][k] for p in procs], keys, vary) for k in first["env"]}
    pre = _token([p["preamble"] for p in procs], keys, vary)
    return ({"argv": argv, "env": env, "preamble": pre, "env_unset": first["env_unset"],
             "image": first["image"], "srun": first["srun"]}, vary)


def _without_fingerprint(preamble: str) -> str:
    """The preamble less srtctl's fingerprint step (the driver's marker, `( MARKER )` joined
    with `&&`): a diagnostics dump to the log dir, not part of the launch."""
    marker = "( SRTCTL_FINGERPRINT_CAPTURE )"
    for form in (" && " + marker, marker + " && ", marker):
        preamble = preamble.replace(form, "")
    return preamble


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
