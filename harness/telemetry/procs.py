"""The host's process table from /proc: each process's CPU time and parent, the trees below
(descendants) and above (ancestors) a process, and which processes listen on a port. The host
sampler (harness.telemetry.host) splits the CPU's time by these."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
PF_KTHREAD = 0x00200000  # include/linux/sched.h: the task is a kernel thread


@dataclass(frozen=True, slots=True)
class ProcTimes:
    pid: int
    ppid: int
    comm: str
    kernel: bool
    cpu_s: float  # utime + stime
    start_ticks: int  # with pid, names one process across samples (pids are reused)
    # cutime + cstime: the CPU of its children that ended and that it reaped. A helper that
    # runs and exits between two samples (a one-shot tool a harness process runs) is never seen
    # itself; its time arrives here, in its parent's line, and so lands in its parent's tree.
    reaped_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.cpu_s + self.reaped_s


def parse_stat(pid: int, text: str) -> ProcTimes | None:
    """One /proc/<pid>/stat line (comm may hold spaces and parentheses: split at the last)."""
    head, sep, tail = text.rpartition(")")
    if not sep:
        return None
    comm = head.partition("(")[2]
    f = tail.split()
    if len(f) < 20:
        return None
    # f[0] is field 3 (state): ppid is field 4, flags 9, utime 14, stime 15, cutime 16,
    # cstime 17, starttime 22.
    return ProcTimes(pid, int(f[1]), comm, bool(int(f[6]) & PF_KTHREAD),
                     (int(f[11]) + int(f[12])) * TICK_S, int(f[19]),
                     (int(f[13]) + int(f[14])) * TICK_S)


def read_processes(proc: Path = PROC) -> list[ProcTimes]:
    out = []
    for d in os.scandir(proc):
        if not d.name.isdigit():
            continue
        try:
            p = parse_stat(int(d.name), Path(d.path, "stat").read_text())
        except (OSError, ValueError):  # it exited between the listing and the read
            continue
        if p is not None:
            out.append(p)
    return out


def descendants(procs: Iterable[ProcTimes], roots: Iterable[int]) -> set[int]:
    """The pids of `roots` and every process below them."""
    children: dict[int, list[int]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p.pid)
    seen: set[int] = set()
    stack = [r for r in roots if r > 0]
    while stack:
        pid = stack.pop()
        if pid not in seen:
            seen.add(pid)
            stack.extend(children.get(pid, ()))
    return seen


def ancestors(pid: int, proc: Path = PROC) -> set[int]:
    """The pids above `pid`, its parent first, up to init (read once: they outlive it)."""
    out: set[int] = set()
    while pid > 1 and len(out) < 64:
        try:
            p = parse_stat(pid, Path(proc, str(pid), "stat").read_text())
        except (OSError, ValueError):
            break
        if p is None or p.ppid in out:
            break
        pid = p.ppid
        out.add(pid)
    return out


def lineage(pid: int, comm: str, procs: dict[int, ProcTimes], harness_ancestors: set[int]
             ) -> str:
    """How a busy foreign process is named: its comm, and where it hangs (an ancestor of the
    harness, or its parent's comm and pid) so the one to stop can be found after it ended."""
    if pid in harness_ancestors:
        return f"{comm}, an ancestor of the harness"
    parent = procs.get(procs[pid].ppid) if pid in procs else None
    return f"{comm}, child of {parent.comm} {parent.pid}" if parent else comm


def listening_pids(port: int, proc: Path = PROC) -> set[int]:
    """The processes holding a socket that listens on TCP `port` (IPv4 or IPv6): an engine
    this host serves that the harness did not launch (attached on loopback, in a container),
    whose CPU is then ours, not a neighbour's."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    pids: set[int] = set()
    if not inodes:
        return pids
    for d in os.scandir(proc):
        if not d.name.isdigit():
            continue
        try:
            fds = os.scandir(Path(d.path, "fd"))
            for fd in fds:
                with contextlib.suppress(OSError):
                    if os.readlink(fd.path) in inodes:
                        pids.add(int(d.name))
                        break
        except OSError:  # gone, or not ours to read
            continue
    return pids
