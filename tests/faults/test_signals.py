"""Signals: Ctrl-C stops a sweep at once, whatever it is doing, keeping every point
measured; an engine never outlives its harness, even stopped (SIGSTOP) when the harness is
killed with SIGKILL.

The Ctrl-C sweeps attach to the scripted server (`engine=endpoint`), so twenty of them fit in
well under a minute; the engine cases use a stand-in child process, and once the real
embedded engine."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.engines.base import LaunchPlan
from harness.engines.process import ServerProcess
from harness.record.results import read_points_counted
from harness.testing.spawn import spawn_server
from tests.helpers import engine_pids, our_processes, wait_for

CONC = "[1,2,3,4,5,6,7,8]"
INTERRUPTED = re.compile(r"^interrupted: (\d+) points kept in (\S+); rerun with run_id=(\S+) "
                         r"to resume$")
EARLY = "interrupted before the run directory was opened: nothing was measured"


@pytest.fixture(scope="module")
def fast_url():
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms", "1"
                      ) as port:
        yield f"http://127.0.0.1:{port}"


def _as_at_a_terminal() -> None:
    """A suite started in the background inherits SIGINT ignored (POSIX), and Python keeps
    it so; Ctrl-C at a terminal is what is modelled, so the harness gets the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _in_main(pid: int) -> bool:
    """The harness is inside `main` (importing the sweep: pyarrow is being mapped)."""
    try:
        return "libarrow" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _phases(rng: random.Random) -> list[tuple[str, float]]:
    """Twenty moments: starting up, loading the tokenizer and building prompts, the instant
    the engine is ready, the instant a point's line lands (a phase ending), and anywhere."""
    out = [("startup", rng.uniform(0, 0.6)) for _ in range(3)]
    out += [("run directory", rng.uniform(0, 1.5)) for _ in range(3)]
    out += [("engine ready", rng.uniform(0, 0.05)) for _ in range(2)]
    out += [(f"point {k}", rng.uniform(0, 0.02)) for k in (1, 1, 2, 2, 3, 3, 4, 5)]
    # "anywhere": a random instant of the measuring, counted from the engine being ready (the
    # eight points take ~1.5 s after it here; counted from the start, a fast sweep had ended
    # at 2.5 s and exited 0 as the signal came)
    out += [("anywhere", rng.uniform(0.0, 1.0)) for _ in range(4)]
    return out


def _wait_for_phase(proc: subprocess.Popen, phase: str, out: Path, points: Path) -> None:
    if phase == "startup":
        wait_for(lambda: _in_main(proc.pid), 60, "the harness to enter main")
    elif phase in ("run directory", "engine ready", "anywhere"):
        mark = "engine ready" if phase == "anywhere" else phase
        wait_for(lambda: mark in out.read_text(), 60, mark)
    elif phase.startswith("point"):
        k = int(phase.split()[1])
        wait_for(lambda: _lines(points) >= k, 60, f"point {k}")


def _interrupt_once(url: str, results: Path, n: int, phase: str, delay: float) -> None:
    run_id = f"i{n}"
    out, points = results / f"{run_id}.out", results / run_id / "points.jsonl"
    args = [sys.executable, "-m", "harness.cli.main", "sweep", "engine=endpoint",
            f"engine.url={url}", f"concurrency={CONC}", "scenario.requests_per_conc=3",
            "scenario.warmup_per_conc=1", f"results_dir={results}", f"run_id={run_id}"]
    with out.open("w") as sink:
        proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT,
                                preexec_fn=_as_at_a_terminal)
    try:
        _wait_for_phase(proc, phase, out, points)
        time.sleep(delay)
        on_disk = _lines(points)
        assert proc.poll() is None, f"{phase}+{delay:.2f}s: finished before the signal"
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        rc = proc.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    text = out.read_text()
    why = f"{phase}+{delay:.2f}s:\n{text[-3000:]}"
    assert rc == 130 and took < 10, why
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, why
    said = [x.strip() for x in re.split(r"[\r\n]", text) if x.strip().startswith("interrupted")]
    assert len(said) == 1, why
    kept, unreadable = read_points_counted(results / run_id)
    assert unreadable == 0 and len(kept) >= on_disk, why  # nothing measured is lost
    for p in kept:
        assert (results / run_id / "requests" / f"{p['point_id']}.parquet").is_file(), why
    if said[0] == EARLY:
        assert not kept, why
        return
    m = INTERRUPTED.match(said[0])
    assert m and int(m[1]) == len(kept) and m[3] == run_id, why


def _our_sweeps() -> list[int]:
    return our_processes("harness.cli.main sweep")


def test_ctrl_c_at_twenty_random_moments_always_stops_the_sweep(tmp_path, fast_url) -> None:
    rng = random.Random(int(os.environ.get("HARNESS_SIGINT_SEED", "14")))
    phases = _phases(rng)
    rng.shuffle(phases)
    with ThreadPoolExecutor(max_workers=2) as pool:  # two at a time: ~30 s on 2 cores
        futures = [pool.submit(_interrupt_once, fast_url, tmp_path, n, phase, delay)
                   for n, (phase, delay) in enumerate(phases)]
        for f in futures:
            f.result()
    assert not _our_sweeps() and not engine_pids()


# --- engines -----------------------------------------------------------------------------------
def _stand_in(tmp_path: Path) -> ServerProcess:
    """A ServerProcess whose 'engine' only sleeps: the lifecycle without a model."""
    plan = LaunchPlan(argv=[sys.executable, "-c", "import time; time.sleep(300)"])
    return ServerProcess(plan, tmp_path / "launch", tmp_path / "engine.log")


def _gone(pid: int) -> bool:
    """Exited (a zombie nobody has reaped yet counts as gone: it runs nothing)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def test_stopping_a_stopped_engine_continues_it_so_sigterm_lands(tmp_path) -> None:
    sp = _stand_in(tmp_path)
    sp.start()
    assert sp.proc is not None
    os.kill(sp.proc.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    sp.stop(grace_s=20)
    assert time.monotonic() - t0 < 5  # SIGCONT let SIGTERM act; no 20 s wait for SIGKILL
    assert sp.proc.returncode == -signal.SIGTERM


def test_a_stopped_engine_dies_with_a_harness_killed_by_sigkill(tmp_path) -> None:
    code = (f"import sys, time\nfrom pathlib import Path\n"
            f"from tests.faults.test_signals import _stand_in\n"
            f"sp = _stand_in(Path({str(tmp_path)!r}))\nsp.start()\n"
            f"print(sp.proc.pid, flush=True)\ntime.sleep(300)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        engine = int(parent.stdout.readline())
        os.kill(engine, signal.SIGSTOP)
        parent.kill()  # SIGKILL: no finally, no atexit; only the kernel can act
        parent.wait(timeout=10)
        wait_for(lambda: _gone(engine), 10, "the stopped engine to die with its harness")
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.slow
def test_real_engine_stopped_then_harness_kill_9_leaves_no_engine(tmp_path) -> None:
    assert not engine_pids()
    out = tmp_path / "harness.out"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli.main", "sweep", "concurrency=[1]",
             "scenario.requests_per_conc=50", f"results_dir={tmp_path}", "run_id=k"],
            stdout=sink, stderr=subprocess.STDOUT, preexec_fn=_as_at_a_terminal)
    try:
        wait_for(lambda: bool(engine_pids()), 180, "the engine to start")
        (engine,) = engine_pids()
        os.kill(engine, signal.SIGSTOP)  # stopped: it could handle no SIGTERM
        proc.kill()
        proc.wait(timeout=10)
        wait_for(lambda: not engine_pids() and _gone(engine), 15, "the engine to die")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in engine_pids():
            os.kill(pid, signal.SIGKILL)
