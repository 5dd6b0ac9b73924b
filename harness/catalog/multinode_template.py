"""Process records of one role made into one template: each record's text rewritten for its
node, its instance's leader and the infra node (the contract's placeholders), and where the
records still differ, per-step values ({vary_N}) or a refusal (harness/catalog/
multinode_roles.py builds the roles from these; docs/multinode.md)."""

from __future__ import annotations

import difflib
import re
from typing import Any

NODE = re.compile(r"srtnode(\d{3})")
# Ports of the services srtctl runs on its infra node (srtctl/ports.py): a node name before
# one of them names the infra node, whatever process writes it.
INFRA_PORTS = ("2379", "2380", "4222", "8700", "8701", "8702")
INFRA_ENV = ("ETCD_ENDPOINTS", "NATS_SERVER", "HEAD_NODE_IP")
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
