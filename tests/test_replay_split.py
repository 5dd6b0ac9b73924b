"""Agentic lanes over worker processes (`client.agentic_workers=lanes`,
harness/workloads/replay_split.py) against one process on the same traces: the same
requests, each stream's order kept, a system idle shift decided once for every process's
timers, the warmup barrier and its exclusion the same."""

from __future__ import annotations

from harness.client.streaming import ClientSettings
from harness.workloads.replay import ReplayResult, ReplaySettings
from harness.workloads.replay_split import LanesJob, replay_over_lanes, split_lanes
from tests.replay_checks import frame
from tests.test_replay import block_prompts, replay, scaled
from tests.test_replay_idle import _sessions, _two_turns

BODY = {"stream": True, "ignore_eos": True, "stream_options": {"include_usage": True}}


def over_lanes(url, tokenizer, traces, lanes, settings, workers=2, seed=1) -> ReplayResult:
    job = LanesJob(ClientSettings(url), traces, lanes, [], settings, block_prompts(tokenizer),
                   BODY, 0, "first_turn_prefix", "max_tokens", seed, "")
    result, health = replay_over_lanes(job, workers)
    assert health.reasons == [] or all("lanes worker" in r for r in health.reasons)
    return result


def test_lanes_go_to_processes_round_robin() -> None:
    assert split_lanes(5, 2) == [[0, 2, 4], [1, 3]]
    assert split_lanes(1, 4) == [[0]]  # never a process without a lane


def test_a_system_idle_shift_is_decided_once_for_every_process(scripted_server,
                                                               smollm2_tokenizer):
    # test_replay_idle's case, each lane in its own process: nothing in flight anywhere, so
    # after idle_cap_s both lanes' timers move by one amount and keep their 0.3 s spacing
    traces = [_two_turns("a", 30.0), _two_turns("b", 30.3)]
    s = ReplaySettings(duration_s=2.5, idle_cap_s=0.5, tree_cap_s=300,
                       warmup_requests_per_lane=0, start_min=0.0, start_max=0.0)
    result = over_lanes(scripted_server, smollm2_tokenizer, traces, 2, s)
    df = frame(result.records)
    assert set(df["lane"]) == {0, 1}
    lanes = _sessions(df)
    a, b = lanes[0], lanes[1]
    idle_from = max(a.loc[0, "end_ts"], b.loc[0, "end_ts"])
    assert abs(a.loc[1, "send_ts"] - idle_from - 0.5) < 0.05  # within the cap, not 30 s
    recorded = (b.loc[0, "end_ts"] + 30.3) - (a.loc[0, "end_ts"] + 30.0)
    assert abs((b.loc[1, "send_ts"] - a.loc[1, "send_ts"]) - recorded) < 0.02
    system = [x for x in result.jumps.shifts if x[0] == "system"]
    assert system[0][2] == 2 and 29 < system[0][1] < 30  # one shift, both processes' timers
    print(result.jumps.shifts)
