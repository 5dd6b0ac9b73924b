"""client.workers=N on agentic lanes: one scheduler in the parent, the HTTP work over N client
worker processes (harness/client/pool.py), on the agentic workload's own run path."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.client.pool import ClientPool, exit_reason
from harness.client.streaming import ClientSettings, run_async
from harness.config.compose import compose_sweep
from harness.testing.spawn import spawn_server
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.agentic_lanes import AgenticLaneWorkload
from harness.workloads.base import LoadLevel, Measurement, Target
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay import Replayer, ReplaySettings
from harness.workloads.traces import load_traces
from harness.workloads.traces.fit import Fit, fit_traces
from tests.workloads.replay_checks import frame

ROOT = Path(__file__).resolve().parents[2]
LANES = 4
BODY = {"stream": True, "ignore_eos": True, "stream_options": {"include_usage": True}}


@pytest.fixture(scope="module")
def fast_server() -> Iterator[str]:
    """Whole trees replay in about half a second (TTFT 2 ms, 0.2 ms a token)."""
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "2", "--itl-ms",
                      "0.2") as port:
        yield f"http://127.0.0.1:{port}"


def _point(url: str, tokenizer, workers: int) -> Measurement:
    """One agentic point through the workload's run path: every first tree replays whole
    (start at turn 0, no warmup quota, idle gaps cut short): ~0.5 s, the window 2 s."""
    sc = compose_sweep(["run_id=u", "scenarios=agentic-weka-cpu", "engine=endpoint",
                        f"engine.url={url}", f"client.workers={workers}",
                        "scenario.duration_s=2", "scenario.min_measured_s=1",
                        "scenario.idle_cap_s=0.002", "scenario.tree_cap_s=0.004",
                        "scenario.warmup_requests_per_lane=0", "scenario.start_min_ratio=0",
                        "scenario.start_max_ratio=0", "scenario.api=completions"])
    wl = AgenticLaneWorkload(sc, tokenizer, ROOT)
    level = LoadLevel("pool", LANES, 0, 7)
    wl.prepare([level], BODY)
    return wl.run(Target(url, ClientSettings(url, workers=workers), lambda: {}), level)


def _first_trees(df) -> set[tuple]:
    first = df[df["session"].str.endswith("S1")]
    return set(zip(first["session"], first["agent"], first["turn"], strict=True))


def test_two_workers_replay_what_one_does(fast_server, smollm2_tokenizer) -> None:
    """The same point at workers 1 and 2: the same first trees, turn for turn; no request
    twice; each lane on one worker (lane mod 2); lanes never overlap their own sessions (the
    concurrency held in total); the phase's health from every process."""
    one, two = (_point(fast_server, smollm2_tokenizer, n) for n in (1, 2))
    df1, df2 = frame(one.records), frame(two.records)
    assert (df1["error"] == "").all() and (df2["error"] == "").all()
    trees = _first_trees(df2)
    assert trees == _first_trees(df1) and len(trees) > 100
    for df in (df1, df2):  # every (session, agent, turn) once: ids without the body counter
        keys = df["request_id"].str.rsplit("/", n=1).str[0]
        assert not keys.duplicated().any()
    workers = [r.tags["client_worker"] for r in two.records]
    lanes = [r.tags["lane"] for r in two.records]
    assert {(ln, w) for ln, w in zip(lanes, workers, strict=True)} == {
        (ln, ln % 2) for ln in range(LANES)}
    assert all("client_worker" not in r.tags for r in one.records)  # in-process: no pool
    for _, g in df2.groupby("lane"):  # a lane's next tree starts once its last one drained
        spans = g.groupby("session").agg(start=("send_ts", "min"), end=("end_ts", "max"))
        spans = spans.sort_values("start")
        assert (spans["start"].values[1:] >= spans["end"].values[:-1]).all()
    h = two.measured.health
    assert 0 < h.inflight_mean <= 2 * LANES + 0.5  # sub-agents fan out; never unbounded
    assert h.cpu_cores > h.cpu_share > 0  # three processes' CPU, summed
    # the hand-off is queueing: issue_ts is the parent's, before the worker's send
    assert all(r.issue_ts <= r.send_ts and r.queue_delay_s >= 0 for r in two.records)


def _scaled_traces():
    w = ROOT / "scenarios/traces/weka-cc-traces"
    return fit_traces([t for n in ("trace_0277", "trace_0026")
                       for t in load_traces(str(w / f"{n}.json"))], Fit("scale", 64))


def test_a_worker_killed_mid_phase_fails_its_requests_and_the_phase_returns(
        scripted_server, smollm2_tokenizer) -> None:
    s = ReplaySettings(duration_s=1.5, idle_cap_s=0.01, tree_cap_s=0.02,
                       warmup_requests_per_lane=0, start_min=0.0, start_max=0.0)
    bodies = AgenticBodies(BlockPrompts(smollm2_tokenizer, 1), BODY, 0, s.api)

    async def go():
        async with ClientPool(ClientSettings(scripted_server), 2) as pool:
            replayer = Replayer(pool, _scaled_traces(), LANES, s, bodies, 1)
            probe = pool.health_probe()

            async def kill_when_busy() -> None:
                await asyncio.sleep(0.3)  # mid-phase: its lanes have records already
                while not pool._workers[1].pending:  # killed holding requests
                    await asyncio.sleep(0.002)
                os.kill(pool.pids[1], signal.SIGKILL)

            replayer.on_measured_start = probe.start
            killer = asyncio.create_task(kill_when_busy())
            result = await replayer.run()
            await killer
            return result, await probe.stop()

    result, health = run_async(go())
    why = "client worker 1 exited with signal SIGKILL"
    failed = [r for r in result.records if r.error]
    assert failed and all(r.error == why for r in failed), {r.error for r in result.records}
    assert all(r.tags["lane"] % 2 == 1 and r.tags["client_worker"] == 1 for r in failed)
    later = [r for r in result.records if r.tags["lane"] % 2 == 1 and r.ok
             and r.send_ts > max(f.end_ts for f in failed)]
    assert later and {r.tags["client_worker"] for r in later} == {0}  # its lanes moved
    assert any(why in reason for reason in health.reasons), health.reasons


def test_exit_reasons_name_the_worker_and_how() -> None:
    assert exit_reason(3, -9, "") == "client worker 3 exited with signal SIGKILL"
    assert exit_reason(0, 1, "") == "client worker 0 exited with code 1"
    assert exit_reason(1, 1, "Traceback...\nRuntimeError: no key") == (
        "client worker 1 exited with an error: RuntimeError: no key")


_CTRL_C = """
import asyncio, os, sys
import orjson
from harness.client.streaming import ClientSettings, run_async
from harness.client.pool import ClientPool
from harness.records import RequestSpec

def spec(i):
    body = orjson.dumps({"prompt": "a", "max_tokens": 50, "stream": True,
                         "x_script": {"ttft_ms": 50, "itl_ms": 20}})
    return RequestSpec(f"c{i}", "/v1/completions", body, 1, 50, tags={"lane": i})

async def main():
    async with ClientPool(ClientSettings(sys.argv[1]), 2) as pool:
        os.kill(pool.pids[0], 2)  # SIGINT at a worker alone: ignored, it goes on serving
        await asyncio.sleep(0.2)
        rec = await pool.send(spec(0))
        assert rec.ok and rec.tags["client_worker"] == 0 and not pool.exits, rec
        print(*pool.pids, flush=True)
        while True:
            await asyncio.gather(*(pool.send(spec(i)) for i in range(4)))

if __name__ == "__main__":
    run_async(main())
"""


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def test_ctrl_c_is_the_parents_and_leaving_the_pool_stops_the_workers(
        scripted_server, tmp_path) -> None:
    """Ctrl-C at a terminal reaches the whole process group: the workers ignore it (one sent
    SIGINT alone goes on serving) and the parent, interrupted mid-requests, stops them."""
    import subprocess
    import sys
    import time

    script = tmp_path / "ctrl_c.py"
    script.write_text(_CTRL_C)
    proc = subprocess.Popen([sys.executable, str(script), scripted_server], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.3)  # requests in flight
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGINT  # KeyboardInterrupt, as the sweep's loop gets
    deadline = time.monotonic() + 5
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in pids)
