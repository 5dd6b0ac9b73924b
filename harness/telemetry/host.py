"""The host's side of a point: how much CPU went to processes that are not ours, and how much
time the hypervisor took (steal), sampled from /proc through the point like the accelerator
telemetry (harness.telemetry.base) and judged by `harness.record.validity.host_rules`.

"Ours" is every process descended from the roots: the harness process (its client workers,
the engine it launched and the engine's helpers are its descendants) and any engine process
given by pid (an engine started outside the harness on this host). Everything else the CPUs
did in the window is foreign:

    foreign = busy(/proc/stat: user + nice + system) - ours

so a neighbour counts whether or not /proc shows it (a process in another PID namespace, one
that started and ended between two samples). The part /proc names is split out as `procs`
(user-space processes, the top ones named), `kernel` (kernel threads: kworkers, ksoftirqd,
...), and the rest is `unattributed`. A process that lives and ends between two samples is
counted in its parent's tree, through the parent's reaped-children time (cutime + cstime): a
one-shot tool one of our processes runs is ours, one a neighbour's shell runs is foreign;
`unattributed` is what no parent reaped in sight (a daemon's double fork, another PID
namespace). Interrupt time (irq,
softirq) is left out of foreign and reported apart (`irq`): the kernel accounts our own
loopback traffic's softirq work there, to no process. Kernel-thread work done for us still
lands in foreign (the bound leaves room for it: docs/host.md).

Linux only; elsewhere the sampler records an error and no readings (a gap, never a failure).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from harness.telemetry.procs import (
    PROC,
    TICK_S,
    ProcTimes,
    ancestors,
    descendants,
    lineage,
    listening_pids,
    parse_stat,
    read_processes,
)

TOP_N = 3
# read by callers through this module (the sampler's public face)
__all__ = ["PROC", "TICK_S", "ProcTimes", "ancestors", "descendants", "listening_pids",
           "parse_stat", "read_processes"]


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """/proc/stat's aggregate line, seconds."""

    busy: float  # user + nice + system (guest is inside user)
    irq: float  # irq + softirq
    steal: float
    total: float  # every column but guest/guest_nice (already counted in user/nice)


@dataclass(frozen=True, slots=True)
class HostReading:
    """What the CPUs did between two samples: `t0`..`t` on the perf clock, seconds of CPU."""

    t0: float
    t: float
    busy_s: float
    irq_s: float
    steal_s: float
    total_s: float
    ours_s: float
    procs_s: float  # foreign user-space processes /proc shows
    kernel_s: float  # kernel threads
    top: tuple[tuple[int, str, float], ...] = ()  # (pid, comm, cpu s) of the busiest foreign

    @property
    def foreign_s(self) -> float:
        return max(0.0, self.busy_s - self.ours_s)


def read_cpu_times(text: str | None = None) -> CpuTimes:
    text = (PROC / "stat").read_text() if text is None else text
    for line in text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            v += [0] * (8 - len(v))
            user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
            busy = user + nice + system
            return CpuTimes(busy * TICK_S, (irq + softirq) * TICK_S, steal * TICK_S,
                            (busy + irq + softirq + idle + iowait + steal) * TICK_S)
    raise ValueError("/proc/stat has no aggregate cpu line")


class HostSampler:
    """`with HostSampler(roots=...) as h: ...`; then `h.readings`, one per period. Roots
    default to this process; `add_root` adds one later (an engine found after the start)."""

    source = "proc"

    def __init__(self, period_s: float = 1.0, roots: Sequence[int] = (),
                 proc: Path = PROC) -> None:
        self.period_s = period_s
        self.roots = set(roots) or {os.getpid()}
        self.proc = proc
        self.readings: list[HostReading] = []
        self.errors = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telemetry-host", daemon=True)
        self._prev: tuple[float, CpuTimes, dict[tuple[int, int], ProcTimes]] | None = None
        # The harness's own ancestors (its shell, make, a test runner): foreign, but named as
        # such, so a busy parent is told from a neighbour when a point is marked.
        self._ancestors = ancestors(os.getpid(), proc)

    def add_root(self, pid: int) -> None:
        self.roots.add(pid)

    def sample(self) -> None:
        """Take one sample; from the second on, a reading of the interval since the last."""
        t = time.perf_counter()
        cpu = read_cpu_times((self.proc / "stat").read_text())
        procs = read_processes(self.proc)
        now = {(p.pid, p.start_ticks): p for p in procs}
        prev, self._prev = self._prev, (t, cpu, now)
        if prev is None:
            return
        t0, cpu0, before = prev
        ours = descendants(procs, self.roots)
        ours_s = procs_s = kernel_s = 0.0
        foreign: list[tuple[int, str, float]] = []
        # A process first seen now ran all its CPU time in this interval only if it started in
        # it; the first sample sees every process, so this holds after it.
        delta = {key: p.total_s - (before[key].total_s if key in before else 0.0)
                 for key, p in now.items()}
        # A process that ended since the last sample: the reaped time of the nearest ancestor
        # still alive now holds its whole life (through any parent that ended too), of which
        # the readings so far counted what it had at the last sample.
        by_pid = {p.pid: key for key, p in now.items()}
        was = {p.pid: p for key, p in before.items() if key not in now}
        for gone in was.values():
            up, hops = gone.ppid, 0
            while up not in by_pid and up in was and hops < 64:
                up, hops = was[up].ppid, hops + 1
            if (alive := by_pid.get(up)) is not None:
                delta[alive] -= gone.total_s
        for key, p in now.items():
            d = delta[key]
            if d <= 0:
                continue
            if p.pid in ours:
                ours_s += d
            elif p.kernel:
                kernel_s += d
            else:
                procs_s += d
                foreign.append((p.pid, p.comm, d))
        foreign.sort(key=lambda x: -x[2])
        procs_by_pid = {p.pid: p for p in procs}
        top = tuple((pid, lineage(pid, comm, procs_by_pid, self._ancestors), s)
                    for pid, comm, s in foreign[:TOP_N])
        self.readings.append(HostReading(
            t0, t, cpu.busy - cpu0.busy, cpu.irq - cpu0.irq, cpu.steal - cpu0.steal,
            cpu.total - cpu0.total, ours_s, procs_s, kernel_s, top))

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            try:
                self.sample()
            except Exception as e:  # one failed read is one gap
                self.errors += 1
                self.last_error = f"{type(e).__name__}: {e}"[:300]
                self._prev = None
            self._stop.wait(max(0.0, self.period_s - (time.perf_counter() - start)))

    def wait_past(self, t: float, timeout_s: float) -> bool:
        """Keep sampling until a reading ends at or after `t` (the window's end)."""
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline and self._thread.is_alive():
            if self.readings and self.readings[-1].t >= t:
                return True
            time.sleep(min(0.05, self.period_s / 4))
        return bool(self.readings) and self.readings[-1].t >= t

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def __enter__(self) -> HostSampler:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


@dataclass(frozen=True, slots=True)
class HostFigures:
    """The window's host figures: CPU in cores (CPU seconds per second of window, 1.0 = one
    core busy throughout), steal as a share of all CPU time. `covered_s` is how much of the
    window the readings cover (0: nothing was sampled)."""

    window_s: float
    covered_s: float
    foreign_cores: float = math.nan
    procs_cores: float = math.nan
    kernel_cores: float = math.nan
    unattributed_cores: float = math.nan
    ours_cores: float = math.nan
    irq_cores: float = math.nan
    steal_share: float = math.nan
    top: tuple[tuple[int, str, float], ...] = field(default=())  # (pid, comm, cores)

    def fields(self) -> dict[str, object]:
        """The point's `host_*` figures (NaN where unmeasured)."""
        return {
            "host_foreign_cpu": self.foreign_cores, "host_foreign_procs_cpu": self.procs_cores,
            "host_kernel_cpu": self.kernel_cores,
            "host_unattributed_cpu": self.unattributed_cores, "host_ours_cpu": self.ours_cores,
            "host_irq_cpu": self.irq_cores,
            "host_steal_share": self.steal_share, "host_covered_s": self.covered_s,
            "host_foreign_top": [f"{comm} (pid {pid}): {cores:.2f} cores"
                                 for pid, comm, cores in self.top] or None,
        }


def window_figures(readings: Sequence[HostReading], start: float, end: float) -> HostFigures:
    """Sum each reading's share of [start, end] (an interval straddling an edge counts by the
    fraction inside); CPU per second of the part covered."""
    window = end - start
    if not readings or window <= 0:
        return HostFigures(max(0.0, window), 0.0)
    covered = busy = irq = steal = total = ours = procs = kernel = 0.0
    top: dict[tuple[int, str], float] = {}
    for r in readings:
        span = r.t - r.t0
        inside = min(r.t, end) - max(r.t0, start)
        if span <= 0 or inside <= 0:
            continue
        w = inside / span
        covered += inside
        busy += w * r.busy_s
        irq += w * r.irq_s
        steal += w * r.steal_s
        total += w * r.total_s
        ours += w * r.ours_s
        procs += w * r.procs_s
        kernel += w * r.kernel_s
        for pid, comm, s in r.top:
            top[(pid, comm)] = top.get((pid, comm), 0.0) + w * s
    if covered <= 0:
        return HostFigures(window, 0.0)
    foreign = max(0.0, busy - ours)
    named = sorted(top.items(), key=lambda kv: -kv[1])[:TOP_N]
    return HostFigures(
        window, covered, foreign / covered, procs / covered, kernel / covered,
        max(0.0, foreign - procs - kernel) / covered, ours / covered, irq / covered,
        steal / total if total > 0 else math.nan,
        tuple((pid, comm, s / covered) for (pid, comm), s in named))


def series_rows(readings: Iterable[HostReading], t0: float) -> list[tuple[float, str, str,
                                                                          str, float]]:
    """The host's time series in harness.sweep.series's long format (source "host"), one
    value per interval at its end: CPU in cores, steal as a share."""
    out = []
    for r in readings:
        span = r.t - r.t0
        if span <= 0:
            continue
        for name, v in (("foreign_cpu", r.foreign_s / span), ("foreign_procs_cpu",
                                                             r.procs_s / span),
                        ("kernel_cpu", r.kernel_s / span), ("ours_cpu", r.ours_s / span),
                        ("steal_share", r.steal_s / r.total_s if r.total_s > 0 else math.nan)):
            if math.isfinite(v):
                out.append((r.t - t0, "host", "", name, float(v)))
    return out


def available() -> str:
    """Why the host cannot be sampled here, or ''."""
    return "" if (PROC / "stat").exists() else "no /proc/stat (not Linux)"


def point_figures(host: HostSampler | None, gpu_readings: Sequence[object], start: float,
                  end: float, devices: Sequence[str] = ()) -> dict[str, object]:
    """Everything the host and the accelerator's clocks say about one point's window, as the
    point's `host_*` and `gpu_*` fields (what harness.record.bench_rules.bench_rules judges)."""
    from harness.telemetry.clocks import clock_figures

    out: dict[str, object] = {}
    if host is not None:
        out.update(window_figures(host.readings, start, end).fields())
        if host.errors:
            out["host_note"] = f"{host.errors} sampler error(s), last: {host.last_error}"
    out.update(clock_figures(gpu_readings, start, end, devices))  # type: ignore[arg-type]
    return out
