"""Replay structure on the scripted server: fast and exact about timing."""

from __future__ import annotations

import time

import pytest

from harness.client import ClientSettings, StreamingClient, run_async
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay import Replayer, ReplaySettings
from harness.workloads.traces import load_traces
from harness.workloads.traces.fit import Fit, fit_traces
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest
from tests.replay_checks import check_structure, frame

W = "scenarios/traces/weka-cc-traces"


def _replay(url, tokenizer, traces, lanes, settings):
    async def go():
        async with StreamingClient(ClientSettings(url)) as c:
            body = {"stream": True, "ignore_eos": True,
                    "stream_options": {"include_usage": True}}
            bodies = AgenticBodies(BlockPrompts(tokenizer, 1), body, 0, settings.api)
            r = Replayer(c, traces, lanes, settings, bodies, 1)
            return await r.run()
    return run_async(go())


@pytest.mark.parametrize("lanes", [1, 3])
def test_replay_follows_the_recorded_structure(scripted_server, smollm2_tokenizer, lanes):
    traces = fit_traces(load_traces(f"{W}/trace_0277.json") + load_traces(f"{W}/trace_0026.json"),
                        Fit("scale", 64))
    s = ReplaySettings(duration_s=12, idle_cap_s=100, tree_cap_s=0.3, warmup_probes=2)
    result = _replay(scripted_server, smollm2_tokenizer, traces, lanes, s)
    df = frame(result.records)
    assert (df["phase"] == "warmup").sum() == lanes and (df["phase"] == "probe").sum() == 2 * lanes
    seen = check_structure(df, {t.id: t for t in traces}, tree_cap=0.3, idle_cap=100)
    assert seen["requests"] >= 20 and seen["gaps"] >= 10 and seen["subagent_requests"] > 0
    assert seen["overlaps"] >= 1 and seen["joins"] >= 1
    assert result.duration_s >= 12


def test_idle_cap_shortens_gaps_when_nothing_is_in_flight(scripted_server, smollm2_tokenizer):
    long_think = Trace("t", "test", 1, [
        TraceRequest(t=0, in_tokens=5, out_tokens=2, hash_ids=[1, 2, 3, 4, 5]),
        TraceRequest(t=60, in_tokens=7, out_tokens=2, hash_ids=[1, 2, 3, 4, 5, 6, 7], think=60),
        TraceRequest(t=70, in_tokens=9, out_tokens=2, hash_ids=list(range(1, 10)), think=60),
    ])
    s = ReplaySettings(duration_s=3.0, idle_cap_s=0.5, tree_cap_s=300, warmup_probes=0)
    t0 = time.perf_counter()
    df = frame(_replay(scripted_server, smollm2_tokenizer, [long_think], 1, s).records)
    m = df[df["phase"] == "measured"].sort_values("send_ts")
    gaps = [g for _, s in m.groupby("session")
            for g in s["send_ts"].values[1:] - s["end_ts"].values[:-1]]
    assert len(gaps) >= 2 and all(0.45 <= g <= 0.7 for g in gaps), gaps
    assert time.perf_counter() - t0 < 10


def test_subagent_waits_for_its_offset_and_parent_joins_it(scripted_server, smollm2_tokenizer):
    sub = SubAgent(t=1.0, agent_id="a", kind="Explore", duration=2.0, items=[
        TraceRequest(t=0, in_tokens=4, out_tokens=2, hash_ids=[9, 8, 7, 6])])
    tr = Trace("j", "test", 1, [
        TraceRequest(t=0, in_tokens=3, out_tokens=2, hash_ids=[1, 2, 3]),
        sub,
        TraceRequest(t=2.5, in_tokens=4, out_tokens=2, hash_ids=[1, 2, 3, 4], think=0.1),
        TraceRequest(t=3.5, in_tokens=5, out_tokens=2, hash_ids=[1, 2, 3, 4, 5], think=0.1),
    ])
    s = ReplaySettings(duration_s=4.0, idle_cap_s=100, tree_cap_s=300, warmup_probes=0)
    df = frame(_replay(scripted_server, smollm2_tokenizer, [tr], 1, s).records)
    m = df[(df["phase"] == "measured") & (df["session"] == "L0S2")].sort_values("send_ts")
    first = m[(m["agent"] == "") & (m["turn"] == 0)].iloc[0]
    child = m[m["agent"] == "a"].iloc[0]
    joined = m[(m["agent"] == "") & (m["turn"] == 2)].iloc[0]
    not_joined = m[(m["agent"] == "") & (m["turn"] == 1)].iloc[0]
    # recorded offset: 1.0 s after the first parent request ended (t=0, api 0)
    assert child["send_ts"] - first["end_ts"] >= 0.95
    assert not_joined["send_ts"] < child["end_ts"]  # 2.5 < 1 + 2: runs beside the sub-agent
    assert joined["send_ts"] >= child["end_ts"]  # 3.5 >= 3.0: waits for it
