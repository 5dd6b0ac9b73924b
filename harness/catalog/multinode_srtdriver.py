"""Runs srt-slurm's own orchestrator (srtctl, `srtctl.cli.do_sweep.SweepOrchestrator.run`) on
one recipe with recording stand-ins for Slurm, and prints every process it would have started
as JSON: what `srtctl apply -f RECIPE` submits and what the job then runs, per role.

This file runs under a separate interpreter that has srtctl's source on its path (the
checkout under capture), never under the harness: it imports nothing from harness. What is
stood in for, and why each stand-in leaves srtctl's own text untouched:
- `start_srun_process` (srtctl.core.slurm, imported by name into every stage module) records
  its keyword arguments (the argv, the env it exports, the nodes, the image) and returns a
  process that stays running; srtctl builds all of those before the call.
- the Slurm allocation: SLURM_JOB_ID / SLURM_NODELIST name fake nodes `srtnodeNNN`; the node
  count is the `#SBATCH --nodes` of srtctl's own sbatch script for the recipe
  (`generate_minimal_sbatch_script`), so the allocation is the one upstream asks for.
- host -> IP resolution answers the host name itself, so every address srtctl writes into
  an argv or env is a node name the importer maps to {host}/{leader}/{head}.
- health/port waits answer ready; the benchmark stage stops the run (the workers and the
  frontend are started by then, in srtctl's order).
- srtctl's fingerprint script (generate_capture_script) is a marker the importer drops.
- etcd and NATS: srtctl starts them through its setup_head.py inside the container; its
  start_nats/start_etcd run here with Popen and the filesystem calls stood in for, so their
  argv are srtctl's.

usage: python multinode_srtdriver.py --recipe PATH[:SELECTOR] [--recipe ...] --workdir DIR
       [--setup-script NAME]   (cwd: a directory holding srtslurm.yaml); prints a JSON list,
       per recipe {"recipe", "capture"} or {"recipe", "error"}
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import pkgutil
import re
import sys
import types
from pathlib import Path

RECORDS: list[dict] = []
CONTEXT: dict = {"stage": "other"}


class StopCapture(Exception):
    """Raised where srtctl would start the benchmark: everything before it is captured."""


class FakePopen:
    pid = 0
    returncode = None
    stdout = None
    stderr = None

    def poll(self):
        return None

    def wait(self, timeout=None):
        return 0

    def terminate(self):
        pass

    def kill(self):
        pass

    def send_signal(self, sig):
        pass

    def communicate(self, *a, **k):
        return ("", "")


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def record_srun(command, **kw):
    rec = {"context": dict(CONTEXT), "command": [str(c) for c in command]}
    rec.update({k: _jsonable(v) for k, v in kw.items()})
    RECORDS.append(rec)
    return FakePopen()


def _true(*a, **k):
    return True


def _host_itself(hostname, *a, **k):
    return hostname


def _import_all(pkg_name: str) -> list[types.ModuleType]:
    pkg = importlib.import_module(pkg_name)
    mods = [pkg]
    for info in pkgutil.walk_packages(pkg.__path__, pkg_name + "."):
        if ".tests" in info.name or info.name.endswith("__main__"):
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except Exception:  # optional extras (mcp, matplotlib, pyarrow) are not needed
            continue
    return mods


FINGERPRINT = "SRTCTL_FINGERPRINT_CAPTURE"


def _fingerprint(*a, **k):
    """srtctl's fingerprint dump (an environment report it writes to /logs before each
    worker) stands here as a marker the importer leaves out: it is diagnostics, not launch."""
    return FINGERPRINT


def _patch_modules(mods: list[types.ModuleType]) -> None:
    for m in mods:
        for name, stand_in in (("start_srun_process", record_srun), ("wait_for_port", _true),
                               ("wait_for_health", _true), ("wait_for_model", _true),
                               ("get_hostname_ip", _host_itself),
                               ("generate_capture_script", _fingerprint)):
            if hasattr(m, name):
                setattr(m, name, stand_in)
        if hasattr(m, "_expand_nodelist"):
            m._expand_nodelist = lambda raw: [n for n in raw.split(",") if n]


def _resolve_variant(recipe: str, workdir: Path) -> Path:
    """The YAML do_sweep loads: the recipe itself, or its override/zip_override variant
    resolved by srtctl's own functions (as `srtctl apply -f FILE:SELECTOR` does)."""
    import yaml
    from srtctl.core import config as cfg

    path, selector = recipe, None
    if ":" in recipe:
        path, selector = recipe.rsplit(":", 1)
    raw = yaml.safe_load(Path(path).read_text())
    if not (isinstance(raw, dict) and "base" in raw):
        return Path(path)
    if hasattr(cfg, "resolve_override_yaml"):
        from srtctl.core.yaml_utils import dump_yaml_with_comments

        variants = cfg.resolve_override_yaml(Path(path), selector=selector)
        if len(variants) != 1:
            raise SystemExit(f"selector {selector!r} picks {len(variants)} variants")
        text = dump_yaml_with_comments(variants[0][1])
    else:
        variants = cfg.generate_override_configs(raw, selector=selector)
        if len(variants) != 1:
            raise SystemExit(f"selector {selector!r} picks {len(variants)} variants")
        text = yaml.safe_dump(variants[0][1], sort_keys=False)
    out = workdir / "config.yaml"
    out.write_text(text)
    return out


def _sbatch_nodes(config, config_path: Path, setup_script: str | None) -> tuple[int, str]:
    from srtctl.cli import submit

    fn = submit.generate_minimal_sbatch_script
    kwargs = {"config": config, "config_path": config_path}
    if "setup_script" in inspect.signature(fn).parameters:
        kwargs["setup_script"] = setup_script
    script = fn(**kwargs)
    nodes = [int(n) for n in re.findall(r"^#SBATCH --nodes=(\d+)", script, re.M)]
    if not nodes:
        raise SystemExit("srtctl's sbatch script names no --nodes")
    return sum(nodes), script


def _wrap(orch_cls, name: str, stage: str) -> None:
    if not hasattr(orch_cls, name):
        return
    orig = getattr(orch_cls, name)

    def wrapped(self, *a, **k):
        saved = dict(CONTEXT)
        CONTEXT.clear()
        CONTEXT["stage"] = stage
        procs = [x for x in a if isinstance(x, list)] or [[x] for x in a if hasattr(x, "node")]
        own = [x for x in a if hasattr(x, "endpoint_mode")]
        if procs and procs[0] and hasattr(procs[0][0], "endpoint_mode"):
            lead = procs[0][0]
            CONTEXT.update(mode=lead.endpoint_mode, index=lead.endpoint_index,
                           gpus=list(getattr(lead, "gpu_indices", []) or []),
                           endpoint_nodes=list(dict.fromkeys(p.node for p in procs[-1])))
            if own:
                CONTEXT["proc_gpus"] = list(getattr(own[0], "gpu_indices", []) or [])
        try:
            return orig(self, *a, **k)
        finally:
            CONTEXT.clear()
            CONTEXT.update(saved)

    setattr(orch_cls, name, wrapped)


def _infra_argv(infra_record: dict) -> list[dict]:
    """etcd and NATS as srtctl's setup_head.py starts them, from the infra record's argv."""
    from srtctl.cli import setup_head

    out: list[dict] = []
    argv = infra_record["command"]
    payload = None
    if "--nats-max-payload-mb" in argv:
        payload = int(argv[argv.index("--nats-max-payload-mb") + 1])
    files: dict[str, str] = {}

    class _Popen(FakePopen):
        def __init__(self, cmd, *a, **k):
            out.append({"command": [str(c) for c in cmd]})

    class _File:
        def __init__(self, p, mode="r"):
            self.p = str(p)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def write(self, s):
            files[self.p] = files.get(self.p, "") + s

    fake_os = types.SimpleNamespace(path=types.SimpleNamespace(exists=lambda p: p not in (
        "/tmp/nats", "/tmp/etcd")), makedirs=lambda *a, **k: None, environ=os.environ)
    setup_head.subprocess = types.SimpleNamespace(Popen=_Popen, PIPE=-1, STDOUT=-2,
                                                  DEVNULL=-3)
    setup_head.os = fake_os
    setup_head.shutil = types.SimpleNamespace(rmtree=lambda *a, **k: None)
    setup_head.open = _File
    setup_head.start_nats("/configs/nats-server", **(
        {"max_payload_mb": payload} if "max_payload_mb" in
        inspect.signature(setup_head.start_nats).parameters else {}))
    out[-1].update(service="nats", files=dict(files))
    files.clear()
    setup_head.start_etcd(infra_record["nodelist"][0], "/configs/etcd", None)
    out[-1].update(service="etcd", files=dict(files))
    return out


def _stand_in_orchestrator(do_sweep, orch_cls, state: dict) -> None:
    """srtctl's orchestrator with its process starts recorded, its benchmark stage stopping
    the capture, and what needs a cluster (telemetry, model staging, locks) a no-op."""
    for name, stage in (("start_head_infrastructure", "infra"),
                        ("start_mooncake_master", "mooncake"), ("start_worker", "worker"),
                        ("start_endpoint_worker", "worker"), ("start_frontend", "frontend")):
        _wrap(orch_cls, name, stage)

    def stop(self, *a, **k):
        state["benchmark"] = True
        raise StopCapture

    orch_cls.run_benchmark = stop
    for name in ("start_power_telemetry", "start_tachometer", "_stage_model",
                 "_ensure_model_cached", "_clean_stale_hf_locks"):
        if hasattr(orch_cls, name):
            setattr(orch_cls, name, lambda self, *a, **k: [])
    for name in ("record_resource_snapshot", "write_lockfile", "setup_signal_handlers",
                 "start_process_monitor"):
        if hasattr(do_sweep, name):
            setattr(do_sweep, name, lambda *a, **k: None)
    state["wrapped"] = True


def capture(recipe: str, workdir: Path, setup_script: str | None, mods, state: dict) -> dict:
    """One recipe through srtctl's orchestrator; the records of every process it started."""
    from dataclasses import replace

    from srtctl.cli import do_sweep
    from srtctl.core.config import load_config

    RECORDS.clear()
    CONTEXT.clear()
    CONTEXT["stage"] = "other"
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ["SRTCTL_OUTPUT_DIR"] = str(workdir / "out")
    config_path = _resolve_variant(recipe, workdir)
    config = load_config(config_path)
    if setup_script:
        config = replace(config, setup_script=setup_script)
    nodes, _ = _sbatch_nodes(config, config_path, setup_script)
    os.environ["SLURM_NODELIST"] = ",".join(f"srtnode{i:03d}" for i in range(nodes))
    os.environ["SLURM_JOB_NUM_NODES"] = str(nodes)
    _patch_modules(mods + [m for m in list(sys.modules.values())
                           if getattr(m, "__name__", "").startswith("srtctl")])
    orch_cls = do_sweep.SweepOrchestrator
    if not state.get("wrapped"):
        _stand_in_orchestrator(do_sweep, orch_cls, state)
    state["benchmark"] = False
    runtime = do_sweep.RuntimeContext.from_config(config, "4242")
    orch = orch_cls(config=config, runtime=runtime)
    orch.run()
    if not state["benchmark"]:
        raise RuntimeError("srtctl's run stopped before the benchmark stage (see its log)")
    infra = [r for r in RECORDS if r["context"].get("stage") == "infra"]
    services = _infra_argv(infra[0]) if infra else []
    r = config.resources
    log_dir = Path(runtime.log_dir)
    files = {f.name: f.read_text() for f in sorted(log_dir.iterdir())
             if f.is_file() and f.suffix not in (".out", ".log", ".err")
             and not f.name.startswith(("lock", "fingerprint"))}
    return {
        "nodes": nodes, "gpus_per_node": int(r.gpus_per_node),
        "head": runtime.nodes.head, "infra": runtime.nodes.infra,
        "worker_nodes": list(runtime.nodes.worker), "backend": str(config.backend_type),
        "frontend_type": str(config.frontend.type), "model_path": str(runtime.model_path),
        "container_image": str(runtime.container_image),
        "records": list(RECORDS), "services": services, "files": files,
        "log_dir": str(log_dir),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True, action="append")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--setup-script")
    args = ap.parse_args()
    os.environ.update(SLURM_JOB_ID="4242", SLURM_JOBID="4242")
    if args.setup_script:
        os.environ["SRTCTL_SETUP_SCRIPT"] = args.setup_script
    mods = _import_all("srtctl")
    _patch_modules(mods)
    state: dict = {}
    out = []
    for n, recipe in enumerate(args.recipe):
        try:
            cap = capture(recipe, Path(args.workdir) / f"r{n}", args.setup_script, mods, state)
            out.append({"recipe": recipe, "capture": cap})
        except (Exception, SystemExit) as e:  # one recipe's refusal is its row's reason
            out.append({"recipe": recipe, "error": f"{type(e).__name__}: {e}"[:400]})
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
