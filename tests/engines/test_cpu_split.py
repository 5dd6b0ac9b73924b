"""The embedded engine leaves the client a core of its own: threads = cores - 1, the
engine pinned to its cores and the client to the rest (harness/engines/cpu_split.py)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from harness.config.compose import compose_sweep
from harness.engines.base import LaunchPlan
from harness.engines.cpu_split import client_cores, engine_cores
from harness.engines.process import ServerProcess
from harness.engines.registry import make_adapter

MULTI_CORE = hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2


def test_engine_and_client_cores_are_disjoint() -> None:
    cores = [0, 1, 2, 3]
    assert engine_cores(-1, cores) == [1, 2, 3]
    assert client_cores([1, 2, 3], cores) == [0]
    assert engine_cores(2, cores) == [2, 3]
    assert client_cores([2, 3], cores) == [0, 1]
    assert engine_cores(None, cores) is None and client_cores(None, cores) is None
    # One core: the engine shares it, and the client is not pinned away from it.
    assert engine_cores(-1, [0]) == [0]
    assert client_cores([0], [0]) is None


def test_threads_minus_one_is_every_core_but_the_clients() -> None:
    assert compose_sweep(["concurrency=[1]"]).engine.threads is None  # the default: unpinned
    sc = compose_sweep(["concurrency=[1]", "engine.threads=-1"])
    assert sc.engine.threads == -1 and sc.engine.cpu_affinity
    plan = make_adapter(sc).launch_plan(port=8080, max_concurrency=1)
    cores = sorted(os.sched_getaffinity(0))
    expected = cores[1:] or cores
    assert plan.cpus == tuple(expected)
    assert f'"threads": {len(expected)}' in plan.argv[-1]


def test_threads_null_is_unpinned() -> None:
    sc = compose_sweep(["concurrency=[1]", "engine.threads=null"])
    plan = make_adapter(sc).launch_plan(port=8080, max_concurrency=1)
    assert plan.cpus is None and '"threads"' not in plan.argv[-1]
    sc = compose_sweep(["concurrency=[1]", "engine.threads=-1", "engine.cpu_affinity=false"])
    assert make_adapter(sc).launch_plan(port=8080, max_concurrency=1).cpus is None


@pytest.mark.skipif(not MULTI_CORE, reason="needs two cores to split")
def test_the_engine_process_runs_on_its_cores_only(tmp_path) -> None:
    last = sorted(os.sched_getaffinity(0))[-1]
    plan = LaunchPlan(argv=[sys.executable, "-c", "import time; time.sleep(30)"], port=1,
                      cpus=(last,))
    proc = ServerProcess(plan, tmp_path / "w", tmp_path / "log")
    proc.start()
    try:
        assert proc.proc is not None
        time.sleep(0.1)
        assert os.sched_getaffinity(proc.proc.pid) == {last}
    finally:
        proc.stop(grace_s=1)


def test_the_embedded_engine_starts_below_the_clients_priority(tmp_path) -> None:
    """engine.nice (10 by default for llama.cpp) reaches the process and the threads it starts."""
    sc = compose_sweep(["concurrency=[1]"])
    assert sc.engine.nice == 10 and make_adapter(sc).launch_plan(8080, 1).nice == 10
    code = ("import os, threading, time; threading.Thread(target=time.sleep, args=(30,)).start();"
            " time.sleep(30)")
    plan = LaunchPlan(argv=[sys.executable, "-c", code], port=1, nice=10)
    proc = ServerProcess(plan, tmp_path / "w", tmp_path / "log")
    proc.start()
    try:
        assert proc.proc is not None
        time.sleep(0.3)
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        tids = [int(t) for t in os.listdir(f"/proc/{proc.proc.pid}/task")]
        assert len(tids) == 2
        assert all(os.getpriority(os.PRIO_PROCESS, t) == mine + 10 for t in tids)
    finally:
        proc.stop(grace_s=1)
    unset = compose_sweep(["concurrency=[1]", "engine.nice=null"])
    assert make_adapter(unset).launch_plan(8080, 1).nice is None
