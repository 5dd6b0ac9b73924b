"""A Slurm allocation and the job steps that run a multi-node deployment's roles in it.

The harness either runs inside an allocation already (SLURM_JOB_ID set: `sbatch`/`salloc` ran
it, so `scancel` reaches the harness as SIGTERM) or makes one with `salloc --no-shell` and
cancels it when the deployment stops. Each role instance runs as one `srun --overlap` step per
node, started from an argument list; a step's stdout and stderr go to the role's log. Nothing
here builds a shell string.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.config.schema import SlurmLaunchConfig
from harness.engines.process import EngineStartError

_SLURM_TIMEOUT_S = 30.0
# How long a stop waits for Slurm to report the cancelled steps gone (slurmstepd's own kill
# grace, KillWait, is 30 s by default; ours sends SIGKILL after 10 s, so this is ample).
_SETTLE_S = 30.0


class SlurmError(EngineStartError):
    """Slurm refused or could not do what the launch needs (names the command and its words)."""


class AllocationCancelled(SystemExit):
    """The allocation was cancelled under the sweep (`scancel`, a time limit): the sweep stops
    as for SIGTERM, exit 143, measured points kept (README, exit codes)."""

    def __init__(self, job_id: str, state: str) -> None:
        super().__init__(128 + signal.SIGTERM)
        self.job_id, self.state = job_id, state


def _run(argv: list[str], timeout_s: float = _SLURM_TIMEOUT_S) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                           stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} is not installed here: engine=multinode launches through "
                         "Slurm (run the sweep on a node of the cluster, or use engine=endpoint "
                         "engine.url=... to attach to a deployment that is up)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(argv[:3])} did not answer within {timeout_s:g} s") from None
    if r.returncode != 0:
        raise SlurmError(f"{' '.join(argv[:3])} failed (exit {r.returncode}): "
                         f"{(r.stderr or r.stdout).strip()[:400]}")
    return r.stdout


def hostnames(nodelist: str) -> list[str]:
    """`n[1-3],gpu7` -> ['n1', 'n2', 'n3', 'gpu7'], as Slurm expands it."""
    return _run(["scontrol", "show", "hostnames", nodelist]).split()


def node_address(node: str) -> str:
    """The node's NodeAddr (what its daemons, and so its steps' listeners, are reached at)."""
    out = _run(["scontrol", "show", "node", node, "-o"])
    m = re.search(r"\bNodeAddr=(\S+)", out)
    return m.group(1) if m else node


def job_field(job_id: str, name: str) -> str | None:
    """One field of `scontrol show job` (None once Slurm has forgotten the job)."""
    try:
        out = _run(["scontrol", "show", "job", job_id, "-o"])
    except SlurmError:
        return None
    m = re.search(rf"\b{name}=(\S+)", out)
    return m.group(1) if m else None


@dataclass
class Allocation:
    job_id: str
    nodes: list[str]  # hostnames, in Slurm's order (the first is the head node)
    addresses: dict[str, str]  # hostname -> NodeAddr
    owned: bool  # made by the harness (cancelled when the deployment stops)

    def state(self) -> str:
        return job_field(self.job_id, "JobState") or "GONE"

    def running(self) -> bool:
        return self.state() == "RUNNING"

    def release(self, settle_s: float = _SETTLE_S) -> None:
        """Cancel the allocation the harness made, and wait (bounded) until Slurm lists no step
        of it: `scancel` returns at once while the steps' tasks are still being killed, and a
        sweep that went on (or exited) then would leave workers running for a while."""
        if self.owned:
            with contextlib.suppress(SlurmError):
                _run(["scancel", self.job_id])
            wait_steps_gone(self.job_id, None, settle_s)


def allocate(cfg: SlurmLaunchConfig, nodes: int, name: str, timeout_s: float) -> Allocation:
    """The allocation the deployment runs in: the one the harness runs inside (SLURM_JOB_ID),
    else a new one of `nodes` nodes from `salloc --no-shell`."""
    inside = os.environ.get("SLURM_JOB_ID")
    if inside:
        listed = hostnames(os.environ.get("SLURM_JOB_NODELIST")
                           or job_field(inside, "NodeList") or "")
        if len(listed) < nodes:
            raise SlurmError(f"the allocation this sweep runs in (job {inside}) has "
                             f"{len(listed)} nodes; the deployment needs {nodes}: allocate "
                             f"{nodes} (salloc -N {nodes}), or lower engine.slurm.max_nodes")
        return Allocation(inside, listed, {n: node_address(n) for n in listed}, owned=False)
    argv = ["salloc", "--no-shell", f"--nodes={nodes}", f"--job-name={name}",
            f"--time={cfg.time_limit}"]
    argv += [f"--partition={cfg.partition}"] if cfg.partition else []
    argv += [f"--account={cfg.account}"] if cfg.account else []
    argv += [f"--nodelist={','.join(cfg.nodelist)}"] if cfg.nodelist else []
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                           stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        _run(["salloc"])  # raises the not-installed message
        raise
    except subprocess.TimeoutExpired:
        raise SlurmError(f"Slurm granted no allocation of {nodes} nodes within {timeout_s:g} s "
                         "(engine.startup_timeout_s); see squeue for the queue, or set "
                         "engine.slurm.partition / engine.slurm.nodelist") from None
    m = re.search(r"Granted job allocation (\d+)", r.stderr + r.stdout)
    if r.returncode != 0 or not m:
        raise SlurmError(f"salloc refused {nodes} nodes (exit {r.returncode}): "
                         f"{(r.stderr or r.stdout).strip()[:400]}; check engine.slurm.partition, "
                         "engine.slurm.account and engine.slurm.nodelist")
    job = m.group(1)
    listed = hostnames(job_field(job, "NodeList") or "")
    return Allocation(job, listed, {n: node_address(n) for n in listed}, owned=True)


@dataclass
class Step:
    """One srun step: a role instance on one node."""

    label: str  # e.g. decode.0@n3
    role: str
    node: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    env_unset: tuple[str, ...] = ()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None


# The one shell text the launcher runs: it sources upstream's captured preamble (a file in the
# launch directory) and then execs the step's argv, passed as arguments, never interpolated.
SOURCE_THEN_EXEC = 'source "$0" && exec "$@"'


def step_argv(alloc: Allocation, nodes: tuple[str, ...], name: str, argv: list[str],
              workdir: Path, cfg: SlurmLaunchConfig, image: str | None,
              srun: dict | None = None, preamble_file: Path | None = None) -> list[str]:
    """srun's argv for one step on `nodes` (one node, or all of an MPI instance's), with
    upstream's srun options, in the image where one runs (docs/multinode.md)."""
    srun = srun or {}
    tasks = int(srun.get("ntasks_per_node") or 0)
    out = ["srun", f"--jobid={alloc.job_id}", "--overlap", f"--nodes={len(nodes)}",
           *([f"--ntasks-per-node={tasks}"] if tasks else ["--ntasks=1"]),
           f"--nodelist={','.join(nodes)}", f"--job-name={name}", "--export=ALL",
           "--kill-on-bad-exit=1", f"--chdir={workdir}"]
    out += [f"--mpi={srun['mpi']}"] if srun.get("mpi") else []
    if image and cfg.container_runtime == "pyxis":  # pyxis's own options (container-remap-root)
        for opt, value in (srun.get("srun_options") or {}).items():
            out.append(f"--{opt}" + (f"={value}" if value not in ("", None) else ""))
    if preamble_file is not None:
        argv = ["bash", "-c", SOURCE_THEN_EXEC, str(preamble_file), *argv]
    if image and cfg.container_runtime == "pyxis":
        mounts = ",".join([f"{workdir}:{workdir}", *cfg.container_mounts])
        return [*out, f"--container-image={image}", f"--container-mounts={mounts}",
                f"--container-workdir={workdir}", *argv]
    if image and cfg.container_runtime == "apptainer":
        binds = [b for m in [f"{workdir}", *cfg.container_mounts] for b in ("--bind", m)]
        return [*out, "apptainer", "exec", "--nv", *binds, "--pwd", str(workdir), image, *argv]
    return [*out, *argv]


def start_step(step: Step, srun_argv: list[str]) -> None:
    step.log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(step.log_path, "ab") as log:
        log.write(f"# {step.label}: {srun_argv}\n".encode())
        log.flush()
        try:
            env = {k: v for k, v in {**os.environ, **step.env}.items()
                   if k not in step.env_unset}
            step.proc = subprocess.Popen(srun_argv, env=env,
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            raise SlurmError(f"could not start srun for {step.label}: {e}") from e


def stop_steps(steps: list[Step], alloc: Allocation | None, grace_s: float = 10.0) -> None:
    """Every step ends: srun forwards SIGTERM to its tasks; what is left after the grace is
    killed, and any step Slurm still lists for this job under our names is cancelled."""
    for s in steps:
        if s.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.proc.pid, signal.SIGTERM)  # type: ignore[union-attr]
    deadline = time.monotonic() + grace_s
    for s in steps:
        if s.proc is None:
            continue
        with contextlib.suppress(subprocess.TimeoutExpired):
            s.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        if s.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.proc.pid, signal.SIGKILL)
            s.proc.wait()
    if alloc is not None and not alloc.owned:
        names = {s.label for s in steps}
        for step_id in listed_steps(alloc.job_id, names):
            with contextlib.suppress(SlurmError):
                _run(["scancel", step_id])
        wait_steps_gone(alloc.job_id, names, _SETTLE_S)


def wait_steps_gone(job_id: str, names: set[str] | None, settle_s: float) -> bool:
    """Poll until Slurm lists no step of the job (of those names, when given): True when gone
    within `settle_s`. A step Slurm still lists after that is left to Slurm, not waited on."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            out = _run(["squeue", "--steps", f"--jobs={job_id}", "--noheader",
                        "--format=%i %j"])
        except SlurmError:
            return True  # the job is gone (squeue refuses an unknown job id)
        left = [ln for ln in out.splitlines()
                if ln.split() and (names is None or ln.split()[-1] in names)]
        if not left or time.monotonic() >= deadline:
            return not left
        time.sleep(0.25)


def listed_steps(job_id: str, names: set[str]) -> list[str]:
    """Step ids (J.S) Slurm still runs for this job under the given step names."""
    try:
        out = _run(["squeue", "--steps", f"--jobs={job_id}", "--noheader", "--format=%i %j"])
    except SlurmError:
        return []
    return [line.split()[0] for line in out.splitlines()
            if len(line.split()) == 2 and line.split()[1] in names]
