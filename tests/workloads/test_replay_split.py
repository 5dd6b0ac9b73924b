"""Agentic lanes over worker processes (`client.agentic_workers=lanes`,
harness/workloads/replay_split.py) against one process on the same traces: the same
requests, each stream's order kept, a system idle shift decided once for every process's
timers, the warmup barrier and its exclusion the same."""

from __future__ import annotations

from pathlib import Path

from harness.client.streaming import ClientSettings
from harness.config.compose import compose_sweep
from harness.records import PHASE_MEASURED, PHASE_PROBE, PHASE_WARMUP
from harness.workloads.agentic_lanes import AgenticLaneWorkload
from harness.workloads.base import LoadLevel, Measurement, Target
from harness.workloads.replay import ReplayResult, ReplaySettings
from harness.workloads.replay_split import LanesJob, replay_over_lanes, split_lanes
from harness.workloads.traces.model import Trace
from tests.client.test_client_pool import fast_server  # noqa: F401  # a fixture
from tests.workloads.replay_checks import frame
from tests.workloads.test_replay import block_prompts, replay
from tests.workloads.test_replay_idle import _req, _two_turns, assert_one_system_shift

ROOT = Path(__file__).resolve().parents[2]
BODY = {"stream": True, "ignore_eos": True, "stream_options": {"include_usage": True}}


def over_lanes(url, tokenizer, traces, lanes, settings, workers=2, seed=1) -> ReplayResult:
    job = LanesJob(ClientSettings(url), traces, lanes, [], settings, block_prompts(tokenizer),
                   BODY, 0, "first_turn_prefix", "max_tokens", seed, "")
    result, _ = replay_over_lanes(job, workers)
    return result


def test_lanes_go_to_processes_round_robin() -> None:
    assert split_lanes(5, 2) == [[0, 2, 4], [1, 3]]
    assert split_lanes(1, 4) == [[0]]  # never a process without a lane


def test_a_system_idle_shift_is_decided_once_for_every_process(scripted_server,
                                                               smollm2_tokenizer):
    # test_replay_idle's case, each lane in its own process: nothing in flight anywhere, so
    # after idle_cap_s both lanes' timers move by one amount and keep their 0.3 s spacing;
    # the same requests, in the same order per lane, and the same shifts as one process.
    # (Its race with a timer that has just fired, once seen here in a full suite, is hit every
    # time in tests/workloads/test_replay_split_shift.py.)
    traces = [_two_turns("a", 30.0), _two_turns("b", 30.3)]
    s = ReplaySettings(duration_s=2.0, idle_cap_s=0.5, tree_cap_s=300,
                       warmup_requests_per_lane=0, start_min=0.0, start_max=0.0)
    two = over_lanes(scripted_server, smollm2_tokenizer, traces, 2, s)
    assert {(r.tags["lane"], r.tags["client_worker"]) for r in two.records} == {(0, 0), (1, 1)}
    assert_one_system_shift(two)

    one = replay(scripted_server, smollm2_tokenizer, traces, 2, s)
    orders = []
    for r in (one, two):  # what the deadline cuts is either side of it within a timer's tick
        d = frame(r.records).sort_values("send_ts")
        d = d[d["send_ts"] < r.deadline - 0.1]
        orders.append({lane: list(zip(g["session"], g["turn"], strict=True))
                       for lane, g in d.groupby("lane")})
    assert orders[0] == orders[1]
    longs = [[round(by, 1) for scope, by, _ in r.jumps.shifts if scope == "system" and by > 1]
             for r in (one, two)]
    assert len(longs[1]) == len(longs[0]) >= 2
    assert all(abs(x - y) < 0.05 for x, y in zip(*longs, strict=True))


def _point(url: str, tokenizer, workers: int) -> Measurement:
    """Every lane from its t* (25-75% into its tree) with two warmup requests a lane, then its
    tree to the end: ~0.5 s on the fast server, the window 1.5 s."""
    sc = compose_sweep(["run_id=u", "scenarios=agentic-weka-cpu", "engine=endpoint",
                        f"engine.url={url}", f"client.workers={workers}",
                        "client.agentic_workers=lanes", "scenario.duration_s=1.5",
                        "scenario.min_measured_s=1", "scenario.idle_cap_s=0.002",
                        "scenario.tree_cap_s=0.004", "scenario.warmup_requests_per_lane=2",
                        "scenario.api=completions"])
    wl = AgenticLaneWorkload(sc, tokenizer, ROOT)
    level = LoadLevel("lanes", 4, 0, 7)
    wl.prepare([level], BODY)
    return wl.run(Target(url, ClientSettings(url, workers=workers), lambda: {}), level)


def test_two_processes_replay_what_one_does_warmup_excluded_alike(fast_server,  # noqa: F811
                                                                 smollm2_tokenizer):
    """Through the workload's run path: each lane's first tree from its t* to its end, the
    same turns at workers 1 and 2 (lanes split), each stream in turn order; the same primers,
    two warmup requests a lane, and no measured request before every process's warmup
    drained."""
    one, two = (_point(fast_server, smollm2_tokenizer, n) for n in (1, 2))
    frames = []
    for m in (one, two):
        df = frame(m.records)
        assert (df["error"] == "").all()
        frames.append(df[df["session"].str.endswith("S1")])
        warm = df[df["phase"] != PHASE_MEASURED]
        measured = df[df["phase"] == PHASE_MEASURED]
        assert len(measured) > 50 and warm["end_ts"].max() <= measured["send_ts"].min()
        assert (warm[warm["phase"] == PHASE_PROBE].groupby("lane").size() == 2).all()
    turns = [set(zip(f["session"], f["agent"], f["turn"], strict=True)) for f in frames]
    assert turns[0] == turns[1]
    primers = [set(zip(f["session"], f["agent"], f["turn"], strict=True))
               for f in (x[x["phase"] == PHASE_WARMUP] for x in frames)]
    assert primers[0] == primers[1] and primers[0]
    for (_, _), g in frames[1].groupby(["session", "agent"]):
        assert list(g.sort_values("send_ts")["turn"]) == sorted(g["turn"])
    assert {(r.tags["lane"] % 2, r.tags["client_worker"]) for r in two.records} == {
        (0, 0), (1, 1)}
    h = two.measured.health
    assert h.cpu_cores > 0 and h.inflight_mean > 0  # both processes' probes


def _spread_traces() -> list:
    # t* = 1.0 in both (start ratio 0.5 of a 2 s span): lane 0's primer (turn 1, t 0.98) has
    # a 0.02 s lead, lane 1's (turn 0) 1.0 s, so lane 0's primer waits 0.98 s for lane 1's to
    # land with it; after one warmup request each, lane 0's next turn is parked 0.9 s out
    # (its recorded gap), lane 1's 0.7 s
    def turns(ts: list[float], first: int) -> list:  # short calls: one chain, no overlap
        return [_req(t, list(range(first, first + k + 1)), 0.01) for k, t in enumerate(ts)]

    return [Trace("a", "test", 1, turns([0.0, 0.98, 1.0, 2.0], 1)),
            Trace("b", "test", 1, turns([0.0, 1.0, 1.7, 2.0], 10))]


def test_primers_spread_and_warmup_barrier_span_the_processes(scripted_server,
                                                              smollm2_tokenizer):
    """One lane a process, their warmups of different lengths: the primers land together
    (lane 0's waits out lane 1's longer lead), profiling starts once both drained, and the
    parked turns keep their 0.3 s spacing across the processes, as in one process."""
    s = ReplaySettings(duration_s=1.0, idle_cap_s=5.0, tree_cap_s=300,
                       warmup_requests_per_lane=1, start_min=0.5, start_max=0.5)
    for run in (replay, over_lanes):
        r = run(scripted_server, smollm2_tokenizer, _spread_traces(), 2, s)
        df = frame(r.records)
        first = df[df["session"].str.endswith("S1")].set_index(["lane", "turn"])
        assert abs(first.loc[(0, 1), "send_ts"] - first.loc[(1, 0), "send_ts"] - 0.98) < 0.05
        warm, measured = df[df["phase"] != PHASE_MEASURED], df[df["phase"] == PHASE_MEASURED]
        assert warm["end_ts"].max() <= measured["send_ts"].min()  # the barrier
        assert abs(first.loc[(0, 3), "send_ts"] - first.loc[(1, 2), "send_ts"] - 0.3) < 0.05
        assert first.loc[(0, 3), "phase"] == first.loc[(1, 2), "phase"] == PHASE_MEASURED


def test_a_process_that_dies_fails_the_point_naming_it(fast_server,  # noqa: F811
                                                       smollm2_tokenizer) -> None:
    import asyncio
    import os
    import signal

    import pytest

    from harness.client.streaming import run_async
    from harness.client.workers import WorkerError
    from harness.workloads.replay_split import LanesCoordinator
    from tests.client.test_client_pool import _scaled_traces

    s = ReplaySettings(duration_s=5.0, idle_cap_s=0.01, tree_cap_s=0.02,
                       warmup_requests_per_lane=0, start_min=0.0, start_max=0.0)
    jobs = [LanesJob(ClientSettings(fast_server), _scaled_traces(), 4, ids, s,
                     block_prompts(smollm2_tokenizer), BODY, 0, "first_turn_prefix",
                     "max_tokens", 1, "") for ids in split_lanes(4, 2)]
    coord = LanesCoordinator(jobs, s)

    async def go() -> None:
        async def kill_when_measuring() -> None:
            while not coord.active:
                await asyncio.sleep(0.01)
            os.kill(coord.procs[1].process.pid, signal.SIGKILL)
        killer = asyncio.create_task(kill_when_measuring())
        try:
            await coord.run({})
        finally:
            killer.cancel()

    with pytest.raises(WorkerError, match="lanes worker 1 of 2: client worker 1 exited with "
                                          "signal SIGKILL"):
        run_async(go())
    assert not any(p.process.is_alive() for p in coord.procs)  # the other one stopped too
