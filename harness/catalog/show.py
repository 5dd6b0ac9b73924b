"""`harness catalog show KEY [--json]`: every launch of a shipped catalog recipe, rendered
through the engine adapter (harness/catalog/render.py). The JSON form is stable: keys sorted,
launches in the recipe's order."""

from __future__ import annotations

import json
import posixpath
from typing import Any

from harness.catalog.render import UPSTREAM_HOST, UPSTREAM_PORT, render_launches
from harness.config.compose import compose_sweep
from harness.config.locations import repo_root
from harness.engines.multinode_container import runtime_note

ATTACH_URL = "http://attach.invalid"  # attach recipes compose with some URL; none is contacted


def recipe_name(key: str) -> str:
    base = repo_root() / "recipes" / "recipe"
    for name in (key, f"multinode/{key}"):
        if (base / f"{name}.yaml").is_file():
            return name
    raise KeyError(f"no catalog recipe {key!r} under recipes/recipe/ (or multinode/)")


def show_data(key: str) -> dict[str, Any]:
    import yaml

    name = recipe_name(key)
    path = repo_root() / "recipes" / "recipe" / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text())
    if name.startswith("multinode/"):  # one composition per deployment behind the URL
        deps = list(dict.fromkeys(r["deploy_recipe"] for r in raw["search_space"]))
        rows = [d for dep in deps for d in render_launches(compose_sweep(
            [f"recipe={name}", f"engine.url={ATTACH_URL}", f"engine.deployment={dep}"]))]
    else:
        rows = render_launches(compose_sweep([f"recipe={name}"]))
    source = raw.get("recipe_source", "")
    return {"key": key, "recipe": f"recipes/recipe/{name}.yaml", "recipe_source": source,
            "port": UPSTREAM_PORT, "host": UPSTREAM_HOST, "launches": rows,
            "workspace_files": workspace_files(rows, source.split(" ", 1)[0])}


WORKSPACE = "/workspace"


def workspace_files(launches: list[dict[str, Any]], upstream: str) -> list[dict[str, str]]:
    """Every `/workspace/...` path the launches name, and where it comes from. Upstream runs
    its scripts in a container with its checkout mounted at /workspace, also the workdir
    (runners/launch_mi355x-amds.sh@843c6254: `--container-mounts=$GITHUB_WORKSPACE:/workspace/`),
    so the captured paths are upstream's own and kept as data. A path under results/, the GPU
    monitor's csv, or a file the recipe writes itself is an output of the job; any other is a
    file of the checkout at the recipe's commit (`upstream` = `owner/repo@commit`), e.g. a chat
    template or a patch script, which our launch does not mount: it needs that checkout at
    /workspace in the container."""
    found: dict[str, str] = {}
    for ln in launches:
        outputs = {*ln.get("files", {}), ln.get("env", {}).get("GPU_METRICS_CSV", "")}
        texts = [*ln.get("argv", []), *ln.get("env", {}).values(),
                 *(a for s in ln.get("setup", []) for a in s["argv"]),
                 *(a for h in ln.get("helpers", []) for a in h["argv"])]
        for text in texts:
            for path in _paths(str(text)):
                rel = posixpath.normpath(path).removeprefix(WORKSPACE + "/")
                output = path in outputs or rel.startswith("results/")
                found.setdefault(path, "output" if output else rel)
    return [{"path": path, "kind": "output", "source": "written by the job"} if rel == "output"
            else {"path": path, "kind": "checkout", "source": f"{upstream}:{rel}"}
            for path, rel in sorted(found.items())]


def _paths(text: str) -> list[str]:
    import re

    return re.findall(r"/workspace/[^\s'\",;:=}]+", text)


def show(key: str, as_json: bool) -> str:
    data = show_data(key)
    if as_json:
        return json.dumps(data, indent=1, sort_keys=True)
    lines = [f"{data['key']}  ({data['recipe']})", f"source: {data['recipe_source']}",
             f"rendered as upstream's job runs it: port {data['port']}, host {data['host']}", ""]
    lines += launch_lines(data["launches"])
    files = data["workspace_files"]
    if files:
        lines += ["", "/workspace is upstream's checkout inside its container; these launches "
                  "name files there (engine.workspace mounts a checkout of the recipe's commit "
                  "for the ones read from it; engine.files are written by the launch):"]
        lines += [f"    {f['path']}  <- {f['source']}" for f in files]
    return "\n".join(lines)


def launch_lines(launches: list[dict[str, Any]]) -> list[str]:
    """Every launch in full, one setting a line: what `catalog show` and `harness sweep
    --dry-run` print (the same rendering, harness/catalog/render.py)."""
    lines: list[str] = []
    notes = dict.fromkeys(n for ln in launches if (n := _container_note(ln)))
    lines += [f"note: {n}" for n in notes]  # once, not per launch
    for i, ln in enumerate(launches):
        lines.append(f"[{i}] {ln['tag']}  conc {ln['concurrency']}  gpus {ln['gpus']}  "
                     f"{ln['engine']}  spec {ln['speculator']['method']}/{ln['speculator']['k']}"
                     f"  scenario {ln['client']['scenario']}")
        if ln["engine"] in ("endpoint", "multinode"):
            lines.append(f"    deployment: {ln.get('deployment')}")
            t = ln["topology"]
            lines.append(f"    prefill {t.get('prefill')}  decode {t.get('decode')}")
            lines += _role_lines(ln.get("launch"), ln.get("slurm"))
            lines += _client_lines(ln["client"])
            continue
        lines.append(f"    image: {ln['image']}")
        c = ln.get("container")
        if c:
            lines.append(f"    container: {c['runtime']}, working dir {c['workdir']}")
            lines += [f"    mount {m['host']} -> {m['container']}"
                      + (" (read-only)" if m.get("read_only") else "") for m in c["mounts"]]
            lines.append("    command: " + " ".join(_q(a) for a in c["argv"]))
        else:
            lines.append("    on this host, working dir {launch_dir}")
        lines.append("    server argv: " + " ".join(_q(a) for a in ln["argv"]))
        lines += [f"    env {k}={v}" for k, v in ln["env"].items()]
        for name, text in ln["files"].items():
            lines.append(f"    file {{launch_dir}}/{name} ({len(text)} chars):")
            lines += [f"      | {t}" for t in text.splitlines()]
        if ln["kv_offload"]["backend"] != "none":
            lines.append(f"    kv offload: {ln['kv_offload']}")
        lines += [f"    setup ({s['kind']}): " + " ".join(_q(a) for a in s["argv"])
                  for s in ln["setup"]]
        for h in ln["helpers"]:
            lines.append(f"    helper {h['name']} ({h['role']}, port {h['port']}"
                         f"{', in front' if h['fronts'] else ''}): "
                         + " ".join(_q(a) for a in h["argv"]))
            lines += [f"      env {k}={v}" for k, v in sorted(h["env"].items())
                      if ln["env"].get(k) != v]
        lines += _client_lines(ln["client"])
    return lines


def _role_lines(launch: dict[str, Any] | None, slurm: dict[str, Any] | None) -> list[str]:
    """engine=multinode: each role as the Slurm launch runs it (docs/multinode.md)."""
    if not launch:
        return []
    lines = [f"    image: {launch['image']}  nodes {launch['nodes']}  "
             f"gpus/node {launch['gpus_per_node']}  source {launch['source']}"]
    if slurm:
        lines.append(f"    slurm: runtime {slurm['container_runtime']}, partition "
                     f"{slurm['partition']}, stand-in {slurm['worker_stand_in']}")
    for r in launch["roles"]:
        lines.append(f"    role {r['name']} ({r['role']}, {r['instances']} x {r['nodes']} "
                     f"node(s), {r['gpus']} GPUs): " + " ".join(_q(a) for a in r["argv"]))
        lines += [f"      env {k}={v}" for k, v in sorted(r["env"].items())]
        for name, text in sorted(r["files"].items()):
            lines.append(f"      file {{launch_dir}}/{name} ({len(text)} chars):")
            lines += [f"        | {t}" for t in text.splitlines()]
        lines += _container_lines(r.get("container"))
        if r.get("preamble"):
            lines.append(f"      preamble ({len(r['preamble'])} chars):")
            lines += [f"        | {t}" for t in r["preamble"].splitlines()]
    return lines


def _container_note(ln: dict[str, Any]) -> str | None:
    """Where upstream's container options of a launch's roles do not all apply on the
    cluster's container runtime (harness/engines/multinode_container.py)."""
    launch, slurm = ln.get("launch"), ln.get("slurm")
    if not launch or not slurm:
        return None
    return runtime_note([r["container"]["runtime"] for r in launch["roles"]
                         if r.get("container")], slurm["container_runtime"])


def _container_lines(c: dict[str, Any] | None) -> list[str]:
    """A role's container options as upstream passes them (RoleLaunch.container)."""
    if not c:
        return []
    out = []
    if c["devices"]:
        out.append(f"      container ({c['runtime']}) devices: " + " ".join(c["devices"]))
    if c["mounts"]:
        out.append(f"      container ({c['runtime']}) mounts: " + " ".join(c["mounts"]))
    if c["options"]:
        out.append(f"      container ({c['runtime']}) flags: "
                   + " ".join(_q(a) for a in c["options"]))
    return out


def _client_lines(client: dict[str, Any]) -> list[str]:
    out = []
    for k, v in client.items():
        if isinstance(v, dict):
            out += [f"    client {k}.{kk}: {vv}" for kk, vv in v.items()]
        else:
            out.append(f"    client {k}: {v}")
    return out


def _q(a: str) -> str:
    import shlex

    return shlex.quote(a)
