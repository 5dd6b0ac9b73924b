"""Idle caps on the scripted server (docs/replay.md, "Idle"): a system-idle gap moves every
pending timer by the same amount; a tree-idle gap moves that tree's timers only."""

from __future__ import annotations

from harness.workloads.replay import ReplaySettings
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest
from tests.workloads.replay_checks import frame
from tests.workloads.test_replay import replay


def _req(t: float, ids: list[int], api: float = 0.1) -> TraceRequest:
    return TraceRequest(t=t, in_tokens=len(ids), out_tokens=4, hash_ids=ids, api_time=api)


def _two_turns(tid: str, gap: float) -> Trace:
    return Trace(tid, "test", 1, [_req(0.0, [1, 2]), _req(0.1 + gap, [1, 2, 3])])


def _sessions(df):
    first = df[df["session"].str.endswith("S1")]
    return {lane: g.set_index("turn") for lane, g in first.groupby("lane")}


def test_system_idle_moves_every_pending_timer_by_the_same_amount(scripted_server,
                                                                  smollm2_tokenizer):
    # lane 0 waits 30 s after its first turn, lane 1 30.3 s: nothing else is in flight, so
    # after idle_cap_s both timers move together and keep their 0.3 s spacing
    traces = [_two_turns("a", 30.0), _two_turns("b", 30.3)]
    s = ReplaySettings(duration_s=2.5, idle_cap_s=0.5, tree_cap_s=300,
                       warmup_requests_per_lane=0, start_min=0.0, start_max=0.0)
    assert_one_system_shift(replay(scripted_server, smollm2_tokenizer, traces, 2, s))


def assert_one_system_shift(result) -> None:
    """Lanes 0 and 1 of `_two_turns` gaps 30.0 and 30.3 s, idle_cap_s 0.5: the second turns go
    within the cap of the idle start, 0.3 s apart as recorded, after one system shift that
    moved both timers (also over processes: tests/workloads/test_replay_split.py)."""
    lanes = _sessions(frame(result.records))
    a, b = lanes[0], lanes[1]
    idle_from = max(a.loc[0, "end_ts"], b.loc[0, "end_ts"])
    assert abs(a.loc[1, "send_ts"] - idle_from - 0.5) < 0.05  # within the cap, not 30 s
    recorded = (b.loc[0, "end_ts"] + 30.3) - (a.loc[0, "end_ts"] + 30.0)
    assert abs((b.loc[1, "send_ts"] - a.loc[1, "send_ts"]) - recorded) < 0.02
    first = result.jumps.shifts[0]
    assert first[0] == "system" and first[2] == 2 and 29 < first[1] < 30  # one shift, both


def _tree_with_child(tid: str) -> Trace:
    # a sub-agent spawned as the first turn ends, whose request comes 20 s later, and a gated
    # parent turn 40 s after it
    sub = SubAgent(t=0.2, agent_id="c", kind="Explore", duration=20.1,
                   items=[_req(20.1, [5, 6])])
    return Trace(tid, "test", 1, [_req(0.0, [1, 2]), sub, _req(40.0, [1, 2, 3])])


def _busy(tid: str) -> Trace:
    return Trace(tid, "test", 1, [_req(0.4 * k, list(range(1, k + 2))) for k in range(12)])


def test_tree_cap_moves_only_the_idle_trees_timers(scripted_server, smollm2_tokenizer):
    # lane 0's tree goes idle for 20 s; lane 1 keeps sending every 0.3 s, so the system is
    # never idle: only lane 0's own cap (0.6 s) cuts its wait, moving both its timers
    s = ReplaySettings(duration_s=3.5, idle_cap_s=100, tree_cap_s=0.6,
                       warmup_requests_per_lane=0, start_min=0.0, start_max=0.0)
    result = replay(scripted_server, smollm2_tokenizer, [_tree_with_child("t"), _busy("u")], 2, s)
    df = frame(result.records)
    t = df[df["session"] == "L0S1"]
    root, child = t[t["agent"] == ""].set_index("turn"), t[t["agent"] == "c"].iloc[0]
    assert abs(child["send_ts"] - root.loc[0, "end_ts"] - 0.6) < 0.05
    tree_shifts = [x for x in result.jumps.shifts if x[0] == "L0S1"]
    assert tree_shifts[0][2] == 2 and 19 < tree_shifts[0][1] < 20  # child and parent timers
    assert not [x for x in result.jumps.shifts if x[0] in ("system", "L1S1")]
    busy = df[(df["session"] == "L1S1") & (df["phase"] == "measured")].sort_values("send_ts")
    gaps = busy["send_ts"].values[1:] - busy["end_ts"].values[:-1]
    assert len(gaps) >= 3 and (gaps >= 0.25).all()  # its recorded 0.3 s gaps, uncut
    if 1 in root.index:  # the gated turn waited for the child it joins
        assert root.loc[1, "send_ts"] >= child["end_ts"]
