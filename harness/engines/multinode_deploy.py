"""A multi-node deployment brought up on Slurm, watched through its points, and torn down.

Start order is the captured order (helpers, workers, frontend). Ready means every step with a
readiness path answered 200 and the frontend's /v1/models lists the served model; a step that
exits or never answers fails the start with its role, node and log. Stop ends every step and
releases an allocation the harness made, on success, failure, Ctrl-C, SIGTERM or `scancel`.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.config.schema import Deployment, SweepConfig
from harness.engines import multinode_roles as roles
from harness.engines.multinode_container import launch_argv
from harness.engines.process import EngineStartError, log_tail
from harness.engines.slurm_job import (
    Allocation,
    AllocationCancelled,
    Step,
    allocate,
    start_step,
    stop_steps,
)

log = logging.getLogger(__name__)


class SlurmDeployment:
    """What EngineSession holds for engine=multinode in place of one server process."""

    def __init__(self, sc: SweepConfig, dep: Deployment, run_root: Path, launch_id: str,
                 model: str, served_name: str) -> None:
        self.sc, self.dep = sc, dep
        self.run_root, self.launch_id = run_root, launch_id
        self.model, self.served_name = model, served_name
        self.alloc: Allocation | None = None
        self.steps: list[Step] = []
        self.launched: list[roles.StepLaunch] = []
        self.base_url = ""

    @property
    def workdir(self) -> Path:
        return self.run_root / "launch" / self.launch_id

    def log_path(self, label: str) -> Path:
        return self.run_root / "servers" / f"{self.launch_id}.{label}.log"

    def start(self) -> None:
        cfg, timeout = self.sc.engine.slurm, self.sc.engine.startup_timeout_s
        deadline = time.monotonic() + timeout
        need = roles.nodes_needed(self.dep, cfg.max_nodes)
        self.alloc = allocate(cfg, need, f"harness-{self.launch_id}", timeout)
        nodes = self.alloc.nodes[:need]
        placements = roles.place(self.dep, nodes)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.launched = roles.steps(self.dep, placements, nodes, self.alloc.addresses,
                                    self.model, self.served_name, str(self.workdir.resolve()))
        print(f"multinode: job {self.alloc.job_id} on {', '.join(nodes)}; "
              + ", ".join(f"{s.label}" for s in self.launched), flush=True)
        for s in self.launched:
            for name, content in s.files.items():
                path = self.workdir / name
                if not path.resolve().is_relative_to(self.workdir.resolve()):
                    raise EngineStartError(f"role {s.role} ({s.label}): file {name!r} would be "
                                           "written outside the launch directory; fix the "
                                           "row's deployment")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
            preamble = None
            if s.preamble:
                preamble = self.workdir / f"{s.label}.preamble.sh"
                preamble.write_text(s.preamble + "\n")
            step = Step(s.label, s.role, s.node, s.argv, s.env, self.log_path(s.label),
                        env_unset=s.env_unset)
            start_step(step, launch_argv(self.alloc, s, self.workdir, cfg, preamble))
            self.steps.append(step)
        for s, step in zip(self.launched, self.steps, strict=True):
            if s.port and s.ready:
                self._wait_ok(step, f"http://{s.address}:{s.port}{s.ready}", deadline)
        # a router (srt-slurm's nginx) fronts the frontends where there is one: clients go there;
        # without a frontend (srtctl's `frontend.type: vllm`) a worker serves HTTP itself
        entry = next((s for kind in ("router", "frontend", *roles.WORKER_ROLES)
                      for s in self.launched if s.role == kind and s.port), None)
        if entry is None:
            raise EngineStartError("the deployment has no frontend or router with a port: "
                                   "nothing to send requests to (check the row's deployment)")
        self.base_url = f"http://{entry.address}:{entry.port}"
        self._wait_model(deadline)

    def _wait_ok(self, step: Step, url: str, deadline: float) -> None:
        last = [""]

        def answered() -> bool:
            status, body = _get(url)
            last[0] = f"HTTP {status}" if status else body.decode(errors="replace")[:200]
            return status == 200

        self._poll(answered, "before it was ready", deadline, lambda: (
            f"role {step.role} ({step.label}) on node {step.node} did not answer {url} "
            f"within {self.sc.engine.startup_timeout_s:g} s (engine.startup_timeout_s; "
            f"last: {last[0]}); its log {step.log_path}:\n{log_tail(step.log_path)}"))

    def _wait_model(self, deadline: float) -> None:
        """Until the frontend lists the served model: every worker it needs has registered."""
        url = self.base_url + "/v1/models"
        seen: list[str] = []

        def listed() -> bool:
            status, body = _get(url)
            if status == 200:
                try:
                    seen[:] = [m.get("id", "") for m in json.loads(body).get("data", [])]
                except (ValueError, AttributeError):
                    seen.clear()
            return self.served_name in seen

        def unregistered() -> str:
            workers = [s for s in self.steps if s.role in roles.WORKER_ROLES]
            detail = "\n".join(f"- role {s.role} ({s.label}) on node {s.node}: log "
                               f"{s.log_path}:\n{log_tail(s.log_path, 5)}" for s in workers)
            return (f"the frontend {url} did not list {self.served_name!r} within "
                    f"{self.sc.engine.startup_timeout_s:g} s (listed: {seen or 'nothing'}): a "
                    f"worker never registered.\n{detail}")

        self._poll(listed, "before the frontend listed the model", deadline, unregistered)

    def _poll(self, ready: Callable[[], bool], when: str, deadline: float,
              timed_out: Callable[[], str]) -> None:
        """Until `ready()`; a step that dies first, or the deadline, fails the start."""
        while True:
            self._fail_if_dead(when)
            if ready():
                return
            if time.monotonic() > deadline:
                raise EngineStartError(timed_out())
            time.sleep(0.5)

    def _fail_if_dead(self, when: str) -> None:
        for step in self.steps:
            if not step.alive():
                self._raise_if_cancelled()
                raise EngineStartError(
                    f"role {step.role} ({step.label}) on node {step.node} exited with code "
                    f"{step.returncode} {when}; its log {step.log_path}:\n"
                    f"{log_tail(step.log_path)}")

    def _raise_if_cancelled(self) -> None:
        """A step that died because the allocation was cancelled stops the sweep (exit 143)."""
        if self.alloc is None:
            return
        state = self.alloc.state()
        if state != "RUNNING":
            raise AllocationCancelled(self.alloc.job_id, state)

    def alive(self) -> bool:
        return all(s.alive() for s in self.steps)

    def failure_reason(self) -> str:
        self._raise_if_cancelled()
        dead = [s for s in self.steps if not s.alive()]
        if not dead:
            return "the deployment is running"
        s = dead[0]
        return (f"role {s.role} ({s.label}) on node {s.node} died (exit code {s.returncode}); "
                f"last lines of {s.log_path}:\n{log_tail(s.log_path)}")

    def stop(self) -> None:
        stop_steps(self.steps, self.alloc)
        self.steps = []
        if self.alloc is not None:
            self.alloc.release()
            self.alloc = None

    def metrics_texts(self) -> dict[str, str]:
        """Every step's own /metrics (frontend and workers with a port), by step label."""
        out: dict[str, str] = {}
        for s in self.launched:
            if s.port:
                status, body = _get(f"http://{s.address}:{s.port}/metrics")
                if status == 200:
                    out[s.label] = body.decode(errors="replace")
        return out

    def local_pids(self) -> list[int]:
        """This host's processes that run the deployment: each step's srun, and the
        slurmstepd of every step of the job on this host (a node here may be this host: the
        local cluster, or the head node's frontend), whose children are the roles."""
        pids = [s.proc.pid for s in self.steps if s.proc is not None]
        if self.alloc is None:
            return pids
        tag = f"slurmstepd: [{self.alloc.job_id}.".encode()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if (entry / "cmdline").read_bytes().startswith(tag):
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return pids

    def facts(self) -> dict[str, Any]:
        """What the point records: the nodes that served it and each role's share."""
        placements = [(s.role, s.node) for s in self.launched]
        summary: dict[str, dict[str, Any]] = {}
        for s in self.launched:
            entry = summary.setdefault(s.role, {"count": 0, "nodes": [], "gpus": 0})
            entry["nodes"] = sorted({*entry["nodes"], s.node})
        for r in self.dep.roles:
            if r.role in summary:
                summary[r.role]["count"] += r.instances
                summary[r.role]["gpus"] += r.instances * r.gpus
        stand_in = self.sc.engine.slurm.worker_stand_in
        if stand_in:
            for name, entry in summary.items():
                if name in roles.WORKER_ROLES:
                    entry["stand_in"] = stand_in
        return {"nodes": sorted({n for _, n in placements}), "roles": summary,
                "slurm_job_id": self.alloc.job_id if self.alloc else None,
                "worker_stand_in": stand_in}


def _get(url: str, timeout: float = 3.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""
    except (OSError, ValueError) as e:
        return 0, str(e).encode()
