"""Resume after SIGKILL, an engine killed mid-point, attach mode with a secret key."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from harness.record.results import read_points
from harness.testing.spawn import spawn_server
from tests.helpers import (
    CLIENT_RULES,
    HOST_RULES,
    assert_valid_unless_the_instrument_flagged,
    failed_rules,
    harness,
    wait_for,
)

pytestmark = pytest.mark.slow
SMALL = ["scenario.requests_per_conc=3", "scenario.warmup_per_conc=1"]


def _children(pid: int) -> list[int]:
    """The sweep's engine processes (its other child, while a point runs, is the client's
    stamp-probe writer, harness/client/stamp_writer.py)."""
    out = subprocess.run(["pgrep", "-P", str(pid), "-f", "harness.engines"],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_sigkill_midway_then_rerun_keeps_every_point_exactly_once(tmp_path) -> None:
    # Two points are enough: killed after the first lands, the rerun must keep that one and
    # do only the other (a third point added a launch's worth of time and no new case).
    args = [sys.executable, "-m", "harness.cli.main", "sweep", "concurrency=[1,2]", *SMALL,
            f"results_dir={tmp_path}", "run_id=r"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    points = tmp_path / "r" / "points.jsonl"
    try:
        wait_for(lambda: points.is_file() and len(_lines(points)) >= 1, 300, "a first point")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = _lines(points)
    assert len(first) == 1
    r = harness("sweep", "concurrency=[1,2]", *SMALL, f"results_dir={tmp_path}", "run_id=r")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "resuming: 1 of 2 points already complete" in r.stdout
    lines = _lines(points)
    assert sorted(p["conc"] for p in lines) == [1, 2]  # each exactly once, nothing lost
    assert len({p["point_id"] for p in lines}) == 2
    kept = {p["point_id"]: p for p in lines}
    for p in first:  # complete points were kept, not redone
        assert kept[p["point_id"]]["started_at"] == p["started_at"]
    assert all((tmp_path / "r" / "requests" / f"{p['point_id']}.parquet").is_file()
               for p in lines)
    # --fresh (or fresh=true) redoes everything
    r = harness("sweep", "--fresh", "concurrency=[1]", *SMALL, f"results_dir={tmp_path}",
                "run_id=r")
    assert r.returncode == 0 and "resuming" not in r.stdout, r.stderr[-2000:]
    redone = {p["conc"]: p for p in _lines(points)}[1]  # the last line per point wins
    assert redone["started_at"] != {p["conc"]: p for p in lines}[1]["started_at"]


def _disturb_engine_mid_point(tmp_path, run_id: str, sig: int, *extra: str) -> tuple[str, dict]:
    """Run a two-point sweep (conc 2 then 1), send `sig` to the engine while the first point
    is under way, let the sweep finish; return its output and points by concurrency."""
    args = [sys.executable, "-m", "harness.cli.main", "sweep", "concurrency=[2,1]",
            "scenario.requests_per_conc=6", "scenario.warmup_per_conc=1", *extra,
            f"results_dir={tmp_path}", f"run_id={run_id}"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = tmp_path / run_id / "servers" / "job0-fixed-128x64-llamacpp-none.log"
    try:
        wait_for(lambda: log.is_file() and log.read_text().count("prompt eval time") >= 3,
                 300, "the first point to be under way")
        (engine,) = _children(proc.pid)
        os.kill(engine, sig)
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-3000:]
    assert log.read_text().count("# argv:") == 2  # the engine was started again
    return out, {p["conc"]: p for p in read_points(tmp_path / run_id)}


def test_engine_killed_mid_point_fails_that_point_and_the_sweep_goes_on(tmp_path) -> None:
    out, points = _disturb_engine_mid_point(tmp_path, "k", signal.SIGKILL)
    assert points[2]["status"] == "failed" and not points[2]["valid"]
    reason = points[2]["invalid_reasons"][0]
    assert "engine process died (exit code -9)" in reason and "last log lines" in reason
    assert points[2]["num_failed"] > 0  # the requests it broke are counted, not dropped
    assert_valid_unless_the_instrument_flagged(points[1])
    assert "restarting it" in out


def test_engine_that_hangs_mid_point_is_failed_and_replaced(tmp_path) -> None:
    # SIGSTOP: alive, holding its sockets, answering nothing
    _, points = _disturb_engine_mid_point(tmp_path, "h", signal.SIGSTOP,
                                          "client.stall_timeout_s=3")
    assert points[2]["status"] == "failed"
    assert points[2]["invalid_reasons"][0].startswith("engine hung: most requests received "
                                                      "nothing for 3 s")
    assert_valid_unless_the_instrument_flagged(points[1])


def test_attach_mode_with_an_api_key_that_is_never_written(tmp_path) -> None:
    secret = "sk-test-" + os.urandom(8).hex()
    env = {"BENCH_KEY": secret}
    os.environ["BENCH_KEY"] = secret
    try:
        with spawn_server("harness.testing.scripted_server", "--ttft-ms", "20", "--itl-ms", "2",
                          "--api-key-env", "BENCH_KEY", env=env) as port:
            r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}",
                        "engine.api_key_env=BENCH_KEY", "concurrency=[1,4]", *SMALL,
                        f"results_dir={tmp_path}", "run_id=a")
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
            unauthorized = harness("sweep", "engine=endpoint",
                                   f"engine.url=http://127.0.0.1:{port}",
                                   "engine.startup_timeout_s=3", "concurrency=[1]", *SMALL,
                                   f"results_dir={tmp_path}", "run_id=b")
    finally:
        del os.environ["BENCH_KEY"]
    points = read_points(tmp_path / "a")
    assert len(points) == 2 and all(p["status"] == "ok" and p["engine"] == "endpoint"
                                    and p["num_failed"] == 0 for p in points)
    # The scripted server counts prompt words, not tokens: the harness must notice that. On a
    # busy machine the client may also (rightly) flag itself; nothing else may invalidate it.
    for p in points:
        assert "prompt_lengths" in failed_rules(p), p["invalid_reasons"]
        allowed = CLIENT_RULES | HOST_RULES | {"prompt_lengths"}
        assert failed_rules(p) <= allowed, p["invalid_reasons"]
    assert unauthorized.returncode != 0 and "401" in unauthorized.stderr
    for f in (tmp_path / "a").rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f
    assert secret not in r.stdout + r.stderr
