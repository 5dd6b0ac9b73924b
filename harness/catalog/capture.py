"""One job of an InferenceX single-node key captured by running upstream's own files: the
workflow's launch step (harness/catalog/workflow.py) runs the runner's launcher, whose
srun/docker stand-in runs the benchmark script, under bash in a sandbox
(harness/catalog/sandbox.py) with recording stand-ins on PATH (harness/catalog/standins/). The
records become one capture (format: /work/notes/capture_format.md, docs/catalog.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.catalog.masters import MasterKey, launcher_for, runner_nodes
from harness.catalog.sandbox import Sandbox
from harness.catalog.standins import build_path_dir, not_found_handler, plumbing_keys
from harness.catalog.workflow import job_inputs, launch_step

DEFAULT_BOUND_S = 20.0


def vendor_of(runner: str) -> str:
    return "amd" if runner.startswith("mi") else "nvidia"


INSTALLERS = ("pip", "pip3", "apt-get", "apt", "conda", "uv")
PROBES = ("nvidia-smi", "amd-smi", "rocm-smi", "ibv_devinfo", "ibstat", "ibv_devices", "lspci",
          "numactl", "free", "lscpu", "dmesg", "squeue", "sinfo", "scontrol")
LOCAL = ("localhost", "0.0.0.0", "127.0.0.1")


def sh_role(name: str, argv: list[str]) -> str:
    """The role of a call the sh recorder wrote (fast.sh records, Python decides)."""
    if name in INSTALLERS:
        return "install"
    if name == "patch":
        return "patch"
    if name in PROBES or (name == "curl" and any(h in a for a in argv for h in LOCAL)):
        return "probe"
    return "command"


def _sh_record(stem: Path) -> dict[str, Any]:
    argv = stem.with_suffix(".argv").read_bytes().decode(errors="replace").split("\0")[:-1]
    env = {}
    for item in stem.with_suffix(".env").read_bytes().decode(errors="replace").split("\0"):
        if "=" in item:
            k, v = item.split("=", 1)
            env[k] = v
    cwd = stem.with_suffix(".cwd").read_text().strip()
    rec = {"name": argv[0], "argv": argv, "role": sh_role(argv[0], argv), "cwd": cwd, "env": env}
    if stem.name.endswith("-unk"):
        rec["unknown"] = True
    return rec


def _records(rec_dir: Path) -> list[dict[str, Any]]:
    """Every record in call order (their names start with the time in ns)."""
    stems = sorted({p.with_suffix("") for p in rec_dir.iterdir() if p.suffix in
                    (".json", ".argv")}, key=lambda p: int(p.name.split("-", 1)[0]))
    out = []
    for stem in stems:
        try:
            if stem.with_suffix(".json").exists():
                out.append(json.loads(stem.with_suffix(".json").read_text()))
            elif stem.with_suffix(".cwd").exists():
                out.append(_sh_record(stem))
        except (OSError, json.JSONDecodeError, IndexError):
            continue
    return out


def _clean(env: dict[str, str]) -> dict[str, str]:
    drop = set(plumbing_keys())
    return {k: v for k, v in env.items() if k not in drop}


def _argv(rec: dict[str, Any]) -> list[str]:
    return [rec["name"], *rec["argv"][1:]]


def choose_node(mk: MasterKey, runners: dict[str, Any], checkout: Path) -> str | None:
    """The first node of the key's runner label whose launcher exists in the checkout. A label
    configs/runners.yaml does not list (`h200-dgxc`, `cluster:mi325x-tw` at 843c6254) still
    runs upstream: GitHub routes `runs-on: [label]` to any runner carrying it, and the file only
    feeds the matrix generator. Then the node is inferred from the label's name: a listed node
    named after it (h200-dgxc-slurm_0), else `<label>_0` when runners/launch_<label>.sh exists;
    node_inferred() says so, and the report names it."""
    for node in runner_nodes(runners, mk.runner):
        if (checkout / launcher_for(node)).is_file():
            return node
    if runner_nodes(runners, mk.runner):
        return None
    base = mk.runner.split(":", 1)[-1]
    labels = runners.get("labels", {})
    named = sorted({n for nodes in labels.values() for n in nodes if n.startswith(base)})
    for node in [*named, f"{base}_0"]:
        if (checkout / launcher_for(node)).is_file():
            return node
    return None


def node_inferred(mk: MasterKey, runners: dict[str, Any], node: str) -> bool:
    return node not in runner_nodes(runners, mk.runner)


def build_bindirs(root: Path) -> Path:
    """A stand-in PATH directory per GPU vendor under `root`."""
    for vendor in ("nvidia", "amd"):
        if not (root / vendor).exists():
            build_path_dir(root / vendor, vendor)
    return root


def capture_job(checkout: Path, commit: str, mk: MasterKey, row: dict[str, Any],
                job: dict[str, Any], node: str, bound_s: float = DEFAULT_BOUND_S,
                bindirs: Path | None = None) -> dict[str, Any]:
    """Capture one job. `bindirs` holds a stand-in PATH per vendor built once (build_bindirs);
    without it one is built for this job."""
    agentic = job.get("scenario-type") == "agentic-coding"
    cap: dict[str, Any] = {
        "key": mk.key, "master": mk.master, "commit": commit, "script": None,
        "runner_node": node, "scenario": "agentic-coding" if agentic else "fixed-seq-len",
        "isl": job.get("isl"), "osl": job.get("osl"), "conc": job["conc"], "row": row,
        "job": job, "env_in": {}, "server": None, "helpers": [], "setup": [], "client": None,
        "status": "failed", "reason": ""}
    inputs = job_inputs(checkout, job, agentic)
    env, step = launch_step(checkout, inputs, node)
    box = Sandbox(checkout, keep=(bindirs,) if bindirs is not None else ())
    try:
        if bindirs is None:
            bindirs = build_bindirs(box.base / "bin")
            box.keep = (bindirs.resolve(),)
        bindir = bindirs / vendor_of(mk.runner)
        env.update({"PATH": str(bindir), "CAPTURE_RECORD_DIR": str(box.base / "rec"),
                    "CAPTURE_BOUND_S": str(bound_s), "PYTHONCOERCECLOCALE": "0",
                    **not_found_handler(bindir)})
        run = box.run(step, env, bound_s)
        _fill(cap, _records(run.records))
        if cap["server"] is not None and cap["client"] is not None:
            cap["status"], cap["reason"] = "ok", ""
        elif not cap["reason"]:
            script_log = run.records / "script.log"
            output = script_log.read_text(errors="replace") if script_log.is_file() else \
                run.output
            cap["reason"] = _why(cap, run.finished_by, run.exit_code, output, checkout)
    finally:
        box.close()
    return cap


def _fill(cap: dict[str, Any], records: list[dict[str, Any]]) -> None:
    dispatch = next((r for r in records if r["role"] == "dispatch"), None)
    if dispatch is None:
        return
    script = dispatch["script"]
    cap["script"] = script[len("/workspace/"):] if script.startswith("/workspace/") else script
    env_in = _clean(dispatch["script_env"])
    cap["env_in"] = env_in
    server_seen = False
    for r in records[records.index(dispatch) + 1:]:  # before it: the launcher's own calls
        if r["role"] == "dispatch":
            continue
        env = _clean(r["env"])
        if r["role"] == "server" and not server_seen:
            server_seen = True
            cap["server"] = {"argv": _argv(r), "env": env,
                             "env_added": {k: v for k, v in env.items() if env_in.get(k) != v},
                             "files": r.get("files", {}), "cwd": r["cwd"]}
        elif r["role"] in ("helper", "server"):
            cap["helpers"].append({"name": r["name"], "argv": _argv(r),
                                   "env": {k: v for k, v in env.items() if env_in.get(k) != v}})
        elif r["role"] == "client" and cap["client"] is None:
            cap["client"] = {"tool": r.get("tool"), "argv": _argv(r),
                             "env": {k: v for k, v in env.items() if env_in.get(k) != v}}
        elif r["role"] in ("install", "patch", "command") and not server_seen:
            cap["setup"].append({"kind": r["role"], "argv": _argv(r),
                                 **({"unknown": True} if r.get("unknown") else {})})


def _why(cap: dict[str, Any], finished_by: str, code: int | None, output: str,
         checkout: Path) -> str:
    # the workflow step's own wait for a result file says nothing about why
    lines = [ln for ln in output.strip().splitlines()
             if not ln.startswith(("Waiting for result file", "Run failed: Benchmark result"))]
    tail = " | ".join(lines[-4:])[-600:]
    if cap["script"] is None:
        return f"the launcher started no benchmark script (exit {code}): {tail}"
    if not (checkout / cap["script"]).is_file():
        return (f"{cap['script']} does not exist at this commit: the launcher of runner node "
                f"{cap['runner_node']} names it for this key")
    if cap["server"] is None:
        return (f"{cap['script']} started no server ({finished_by}, exit {code}): {tail}")
    return f"{cap['script']} started no client ({finished_by}, exit {code}): {tail}"
