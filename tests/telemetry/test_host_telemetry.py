"""The host reader (harness.telemetry.host) against real processes: a busy process outside our
trees is foreign, one inside (our child, as the engine and the client workers are) is not;
kernel threads are told apart; the host rules judge what it read (harness.record.validity)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.record.bench_rules import bench_rules, host_facts, host_rules
from harness.record.validity import ValiditySettings, judge
from harness.record.workload_traits import built_in_traits
from harness.telemetry import host

FIXED = built_in_traits("fixed")

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")

BUSY = [sys.executable, "-c", "while 1: pass"]


def _cpu_s(pid: int) -> float:
    """The process's own utime + stime, read without the module under test."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _orphan_busy_loop() -> int:
    """A busy loop that is not our descendant: its parent exits at once, so it is re-parented
    to init (or a subreaper above us), as a neighbour's process is."""
    out = subprocess.run(
        [sys.executable, "-c",
         "import subprocess, sys; p = subprocess.Popen(" + repr(BUSY) + ", "
         "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
         "print(p.pid)"],
        capture_output=True, text=True, check=True, timeout=20)
    return int(out.stdout.strip())


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_a_busy_process_outside_our_trees_is_foreign_and_our_own_child_is_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "TOP_N", 1000)  # name every foreign process (a busy host has many)
    ours = subprocess.Popen(BUSY)
    foreign = 0
    try:
        foreign = _orphan_busy_loop()
        assert foreign not in host.descendants(host.read_processes(), [os.getpid()])
        with host.HostSampler(0.5) as h:
            time.sleep(0.6)  # the first sample is the baseline
            a0, b0, t0 = _cpu_s(ours.pid), _cpu_s(foreign), time.perf_counter()
            time.sleep(2.5)
            a1, b1, t1 = _cpu_s(ours.pid), _cpu_s(foreign), time.perf_counter()
            assert h.wait_past(t1, 3.0)
    finally:
        ours.kill()
        ours.wait()
        if foreign:
            _kill(foreign)
    named = {pid for r in h.readings for pid, _, _ in r.top}
    assert foreign in named and ours.pid not in named
    f = host.window_figures(h.readings, t0, t1)
    window = t1 - t0
    ours_cores, foreign_cores = (a1 - a0) / window, (b1 - b0) / window
    assert foreign_cores > 0.02 and ours_cores > 0.02  # each loop ran, on a shared host too
    # The foreign loop is counted (within a sample's tick rounding and window edges) and our
    # child is in ours, never in foreign's named processes.
    assert f.procs_cores >= 0.8 * foreign_cores
    assert f.ours_cores >= 0.8 * ours_cores
    # /proc/stat's busy time and the processes' own times tick apart: the named processes may
    # exceed the whole by a few ticks per sample (1/100 s each), never by more
    assert f.foreign_cores >= f.procs_cores - 0.05
    top = dict(((pid, comm), cores) for pid, comm, cores in f.top)
    assert any(pid == foreign and abs(c - foreign_cores) < 0.25 for (pid, _), c in top.items())
    # ...and the rule, fed this window, calls the point disturbed and names the process.
    figures = host.point_figures(h, [], t0, t1)
    assert figures["host_foreign_cpu"] == f.foreign_cores
    rules, marks = bench_rules(figures, {"num_completed": 10}, FIXED,
                               ValiditySettings(host="invalid", host_foreign_cpu_max=0.1))
    v = judge(rules)
    assert marks == {}
    assert not v.valid and "host_foreign_cpu" in {r.name for r in v.failed}
    assert f"pid {foreign}" in v.reasons[0]


def test_kernel_threads_are_told_apart_from_processes() -> None:
    procs = {p.pid: p for p in host.read_processes()}
    if 2 not in procs:
        pytest.skip("kthreadd not visible in this PID namespace")
    assert procs[2].kernel and not procs[os.getpid()].kernel


def test_proc_stat_arithmetic() -> None:
    text = "cpu  100 20 30 800 10 5 5 30 7 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n"
    c = host.read_cpu_times(text)
    tick = host.TICK_S
    assert math.isclose(c.busy, 150 * tick) and math.isclose(c.irq, 10 * tick)
    assert math.isclose(c.steal, 30 * tick)
    assert math.isclose(c.total, 1000 * tick)  # guest (7) is inside user already
    real = host.read_cpu_times()
    assert real.total >= real.busy + real.steal > 0


def test_a_comm_with_spaces_and_parentheses_parses() -> None:
    line = ("42 (a (b) c) S 7 42 42 0 -1 4194560 1 0 0 0 250 50 3 4 20 0 1 0 9999 0 0"
            " 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0")
    p = host.parse_stat(42, line)
    assert p is not None and p.comm == "a (b) c" and p.ppid == 7 and not p.kernel
    assert math.isclose(p.cpu_s, 300 * host.TICK_S) and p.start_ticks == 9999


def test_window_figures_prorate_readings_at_the_edges() -> None:
    r = [host.HostReading(0.0, 1.0, busy_s=1.0, irq_s=0.0, steal_s=0.1, total_s=2.0, ours_s=0.5,
                          procs_s=0.4, kernel_s=0.0, top=((9, "x", 0.4),)),
         host.HostReading(1.0, 2.0, busy_s=2.0, irq_s=0.3, steal_s=0.0, total_s=2.0, ours_s=0.0,
                          procs_s=2.0, kernel_s=0.0, top=((9, "x", 2.0),))]
    f = host.window_figures(r, 0.5, 2.0)  # half of the first, all of the second
    assert math.isclose(f.covered_s, 1.5)
    assert math.isclose(f.foreign_cores, (0.5 * 0.5 + 2.0) / 1.5)
    assert math.isclose(f.steal_share, 0.05 / 3.0) and math.isclose(f.irq_cores, 0.2)
    assert f.top[0][:2] == (9, "x") and math.isclose(f.top[0][2], 2.2 / 1.5)
    assert host.window_figures([], 0.0, 1.0).covered_s == 0.0


@pytest.mark.parametrize("mode", ["invalid", "warn", "off"])
def test_host_rules_modes(mode: str) -> None:
    s = ValiditySettings(host=mode, steal=mode)
    disturbed = host.HostFigures(10.0, 10.0, foreign_cores=0.9, procs_cores=0.9,
                                 kernel_cores=0.0, unattributed_cores=0.0, ours_cores=1.0,
                                 steal_share=0.2, top=((7, "yes", 0.9),)).fields()
    rules = host_rules(disturbed, s)
    if mode == "off":
        assert rules == []
        return
    v = judge(rules)
    assert {r.name for r in rules} == {"host_foreign_cpu", "host_steal"}
    if mode == "invalid":
        assert not v.valid and not v.fatal and len(v.failed) == 2
        assert "0.90 cores" in v.reasons[0] and "yes (pid 7)" in v.reasons[0]
        assert host_facts(rules, s) == {}
    else:
        assert v.valid
        assert "kept: validity.host=warn" in host_facts(rules, s)["host_warning"]
        assert "kept: validity.steal=warn" in host_facts(rules, s)["host_warning"]
    quiet = {**disturbed, "host_foreign_cpu": 0.05, "host_steal_share": 0.01}
    assert judge(host_rules(quiet, s)).valid and host_facts(host_rules(quiet, s), s) == {}


def test_a_neighbour_fails_by_default_and_steal_is_marked() -> None:
    from types import SimpleNamespace

    from harness.config.schema import ValidityConfig
    from harness.record.validity import host_settings

    assert (ValidityConfig.host, ValidityConfig.steal) == ("invalid", "warn")
    s = ValiditySettings(**host_settings(SimpleNamespace(validity=ValidityConfig())))
    figures = host.HostFigures(10.0, 10.0, foreign_cores=0.05, ours_cores=1.0,
                               steal_share=0.12).fields()
    # the default keeps a point the hypervisor took 12% from, marked, and fails a neighbour's
    rules = host_rules(figures, s)
    assert judge(rules).valid
    assert "kept: validity.steal=warn" in host_facts(rules, s)["host_warning"]
    assert "12.0% of CPU time" in host_facts(rules, s)["host_warning"]
    neighbour = {**figures, "host_foreign_cpu": 0.9}
    assert [r.name for r in judge(host_rules(neighbour, s)).failed] == ["host_foreign_cpu"]
    # steal=invalid fails it, naming the share
    strict = ValiditySettings(**host_settings(SimpleNamespace(
        validity=ValidityConfig(steal="invalid"))))
    v = judge(host_rules(figures, strict))
    assert [r.name for r in v.failed] == ["host_steal"] and "12.0% of CPU time" in v.reasons[0]
    assert [r.name for r in host_rules(figures, ValiditySettings(steal="off"))] == [
        "host_foreign_cpu"]


def test_a_helper_that_starts_and_ends_between_samples_is_ours() -> None:
    """One-shot tools a harness process runs (each gone before the next sample) land in
    ours through the parent's reaped-children time, not in foreign's unattributed rest."""
    burn = [sys.executable, "-c",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.15: pass"]
    with host.HostSampler(1.0) as h:
        time.sleep(1.2)  # the first sample is the baseline
        before = os.times()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 4.0:
            subprocess.run(burn, check=True)
        t1 = time.perf_counter()
        after = os.times()
        assert h.wait_past(t1, 3.0)
    children = (after.children_user + after.children_system
                - before.children_user - before.children_system) / (t1 - t0)
    f = host.window_figures(h.readings, t0, t1)
    assert children > 0.1  # the helpers ran, on a shared host too
    assert f.ours_cores >= 0.8 * children, (f, children)
    # none of it left in foreign: what foreign holds is other processes' (named) and the kernel's
    assert f.unattributed_cores < 0.5 * children, (f, children)


def test_a_chain_that_ends_within_one_interval_is_counted_once() -> None:
    """A shell that runs a tool and both end between two samples (`sh -c 'tool; true'`): the
    tool's life reaches us twice, in the shell's reaped time and in ours once we reap the
    shell; a burn that started before the last sample must not be counted again."""
    burn = ("import time\nt = time.process_time()\n"
            "while time.process_time() - t < 1.6: pass")
    with host.HostSampler(0.5) as h:
        time.sleep(0.7)
        t0 = time.perf_counter()
        subprocess.run(["sh", "-c", f"{sys.executable} -c '{burn}'; true"], check=True)
        t1 = time.perf_counter()
        assert h.wait_past(t1 + 1.0, 3.0)
    f = host.window_figures(h.readings, t0 - 0.5, t1 + 1.0)
    burnt = 1.6 / (t1 + 1.5 - t0)
    assert f.ours_cores >= 0.8 * burnt, (f, burnt)
    assert f.ours_cores <= 1.3 * burnt + 0.05, (f, burnt)  # not the burn twice over


def test_an_unsampled_host_is_not_judged() -> None:
    assert host_rules({}, ValiditySettings()) == []
    assert host_rules(host.HostFigures(5.0, 0.0).fields(), ValiditySettings()) == []


def test_a_bad_host_setting_is_refused_naming_the_key() -> None:
    from types import SimpleNamespace

    from harness.config.errors import ConfigError
    from harness.config.schema import ValidityConfig
    from harness.record.validity import host_settings

    ok = host_settings(SimpleNamespace(validity=ValidityConfig(host="warn")))
    assert ok["host"] == "warn" and ok["host_foreign_cpu_max"] == 0.2
    with pytest.raises(ConfigError, match=r"validity\.host"):
        host_settings(SimpleNamespace(validity=ValidityConfig(host="loose")))
    with pytest.raises(ConfigError, match=r"validity\.host_steal_max"):
        host_settings(SimpleNamespace(validity=ValidityConfig(host_steal_max=-1)))


def test_an_engine_the_harness_did_not_launch_is_ours_by_its_listening_port() -> None:
    from harness.engines.process import free_port

    port = free_port()
    serve = ("import socket\ns = socket.socket()\n"
             f"s.bind(('127.0.0.1', {port})); s.listen()\nwhile 1: pass\n")
    out = subprocess.run(
        [sys.executable, "-c",
         "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
         f"{serve!r}], start_new_session=True, stdout=subprocess.DEVNULL, "
         "stderr=subprocess.DEVNULL); print(p.pid)"],
        capture_output=True, text=True, check=True, timeout=20)
    engine = int(out.stdout.strip())
    try:
        deadline = time.monotonic() + 10
        while not host.listening_pids(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert host.listening_pids(port) == {engine}
        with host.HostSampler(0.5) as h:
            h.add_root(engine)
            time.sleep(2.0)
        named = {pid for r in h.readings for pid, _, _ in r.top}
        assert engine not in named and sum(r.ours_s for r in h.readings) > 0.1
    finally:
        _kill(engine)
    assert host.listening_pids(free_port()) == set()


def test_a_busy_ancestor_of_the_harness_is_named_as_one() -> None:
    """The harness run from a busy parent (a test runner, a shell loop): the parent is foreign
    load, and the reading says it is the harness's own ancestor, not a neighbour's process."""
    code = ("import json, time; from harness.telemetry import host; "
            "h = host.HostSampler(0.3); h.__enter__(); time.sleep(2.0); h.stop(); "
            "print(json.dumps([[pid, comm] for r in h.readings for pid, comm, _ in r.top]))")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parents[2])
    while child.poll() is None:  # this process, the child's parent, busy throughout
        pass
    named = {pid: comm for pid, comm in json.loads(child.stdout.read())}
    assert named.get(os.getpid(), "").endswith(", an ancestor of the harness"), named
