"""The replay scheduler on the scripted server, read from the request records (docs/replay.md):
warmup, joins, background sub-agents, parallel chains, structure."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.testing.spawn import spawn_server
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay import Replayer, ReplayResult, ReplaySettings
from harness.workloads.replay_plan import build_plan, next_turn, start_point, start_seed
from harness.workloads.traces import load_traces
from harness.workloads.traces.fit import Fit, fit_traces
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest
from tests.workloads.replay_checks import check_structure, frame

W = "scenarios/traces/weka-cc-traces"


@pytest.fixture(scope="module")
def fast_server() -> Iterator[str]:
    """A scripted server 8x quicker than the suite's: whole trees replay in a second or two."""
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms",
                      "0.5") as port:
        yield f"http://127.0.0.1:{port}"


_PROMPTS: dict[int, BlockPrompts] = {}  # built once per tokenizer (2 s each)


def block_prompts(tokenizer) -> BlockPrompts:
    if id(tokenizer) not in _PROMPTS:
        _PROMPTS[id(tokenizer)] = BlockPrompts(tokenizer, 1)
    return _PROMPTS[id(tokenizer)]


def replay(url, tokenizer, traces, lanes, settings, seed=1) -> ReplayResult:
    prompts = block_prompts(tokenizer)

    async def go():
        async with StreamingClient(ClientSettings(url)) as c:
            body = {"stream": True, "ignore_eos": True,
                    "stream_options": {"include_usage": True}}
            bodies = AgenticBodies(prompts, body, 0, settings.api)
            return await Replayer(c, traces, lanes, settings, bodies, seed).run()
    return run_async(go())


def scaled(*names: str) -> list[Trace]:
    return fit_traces([t for n in names for t in load_traces(f"{W}/{n}.json")], Fit("scale", 64))


def from_turn_0(**kw) -> ReplaySettings:
    """Whole trees from their first turn, no warmup, idle gaps cut short: order, not time."""
    base = {"duration_s": 2.5, "idle_cap_s": 0.01, "tree_cap_s": 0.02,
            "warmup_requests_per_lane": 0, "start_min": 0.0, "start_max": 0.0}
    return ReplaySettings(**(base | kw))


def _first_tree(df):
    s = df[df["session"] == "L0S1"]
    root = s[s["agent"] == ""].set_index("turn")
    return s, root


def test_tiered_joins_and_background_subagents_on_trace_0277(fast_server, smollm2_tokenizer):
    """AIPerf's loader: a sub-agent gates the first later parent turn at or after its recorded
    end; none: background. trace_0277: agent_001 (ends 139 s) gates the turn at 228 s, agents
    002/003 (end 348 s, 403 s) the turn at 763 s; agent_004 (ends 1061 s) gates nothing."""
    # spawn_end: agent_002 starts its recorded 165 s after turn 0 (cut by the caps), so it is
    # still running when the turn at 228 s goes; at once (upstream), it could end before it
    df = frame(replay(fast_server, smollm2_tokenizer, scaled("trace_0277"), 1,
                      from_turn_0(subagent_start="spawn_end")).records)
    s, root = _first_tree(df)
    end = {a: s[s["agent"] == a]["end_ts"].max() for a in ("agent_001", "agent_002",
                                                            "agent_003", "agent_004")}
    assert len(s[s["agent"] == "agent_004"]) == 11, "the tree ran to its end"
    assert root.loc[1, "send_ts"] >= end["agent_001"]
    assert root.loc[1, "send_ts"] < end["agent_002"]  # tiered: 228 s does not wait for 002
    assert root.loc[7, "send_ts"] >= max(end["agent_002"], end["agent_003"])
    last_004 = s[s["agent"] == "agent_004"]["send_ts"].max()
    assert root.loc[8, "send_ts"] < last_004  # background: the last parent turn goes on
    nxt = df[df["session"] == "L0S2"]
    assert nxt.empty or nxt["send_ts"].min() >= end["agent_004"]  # recycles once drained
    assert nxt.empty or nxt[nxt["agent"] == ""]["turn"].min() == 0  # from turn 0


def test_next_turn_joins_block_the_turn_at_228s(fast_server, smollm2_tokenizer):
    """join_rule=next_turn (AIPerf's earlier loader): every sub-agent between two parent turns
    gates the next one, so the sub-agents ending at 348 s and 403 s block the turn at 228 s."""
    df = frame(replay(fast_server, smollm2_tokenizer, scaled("trace_0277"), 1,
                      from_turn_0(join_rule="next_turn")).records)
    s, root = _first_tree(df)
    subs = s[s["agent"].isin(["agent_001", "agent_002", "agent_003"])]
    assert len(subs) == 4 + 12 + 17
    assert root.loc[1, "send_ts"] >= subs["end_ts"].max()
    a4 = s[s["agent"] == "agent_004"]
    assert root.loc[7, "send_ts"] >= a4["end_ts"].max()


def _forked_subagent() -> Trace:
    # Two chains in one sub-agent: b0 shares only the first two blocks of a0 and starts while
    # a0 runs (a fork); a1 and b1 extend their own chain.
    def req(t, ids, api=0.5):
        return TraceRequest(t=t, in_tokens=len(ids), out_tokens=60, hash_ids=ids, api_time=api)
    sub = SubAgent(t=0.2, agent_id="w", kind="Explore", duration=2.0, items=[
        req(0.2, [1, 2, 3, 4]), req(0.22, [1, 2, 8, 9]),
        req(0.8, [1, 2, 3, 4, 5]), req(0.82, [1, 2, 8, 9, 10])])
    return Trace("fork", "test", 1, [req(0.0, [1], api=0.1), sub,
                                    req(3.0, [1, 6], api=0.1)])


def test_parallel_chains_inside_a_subagent_overlap(scripted_server, smollm2_tokenizer):
    plan = build_plan(_forked_subagent())
    assert [[t.req.hash_ids for t in c.turns] for c in plan.branches[0].children] == [
        [[1, 2, 3, 4], [1, 2, 3, 4, 5]], [[1, 2, 8, 9], [1, 2, 8, 9, 10]]]
    s = from_turn_0(duration_s=1.2, idle_cap_s=10, tree_cap_s=10)
    for split, overlapping in ((True, True), (False, False)):
        df = frame(replay(scripted_server, smollm2_tokenizer, [_forked_subagent()], 1,
                          s.__class__(**{**s.__dict__, "split_chains": split})).records)
        t = df[(df["session"] == "L0S1") & (df["agent"] != "")].sort_values("send_ts")
        assert len(t) == 4
        overlap = (t["send_ts"].values[1:] < t["end_ts"].values[:-1]).any()
        assert overlap == overlapping, t[["agent", "turn", "send_ts", "end_ts"]]


def test_warmup_primes_then_advances_each_lane_by_exactly_n(scripted_server, smollm2_tokenizer):
    traces = scaled("trace_0277", "trace_0026")
    n = 3
    s = ReplaySettings(duration_s=2, idle_cap_s=0.2, tree_cap_s=0.5, warmup_requests_per_lane=n)
    result = replay(scripted_server, smollm2_tokenizer, traces, 3, s)
    df = frame(result.records)
    probes, primers = df[df["phase"] == "probe"], df[df["phase"] == "warmup"]
    assert (probes.groupby("lane").size() == n).all() and probes["lane"].nunique() == 3
    assert (probes["max_tokens"] == 1).all() and (primers["max_tokens"] == 1).all()
    assert df[df["phase"] != "measured"]["end_ts"].max() <= result.profiling_start
    assert df[df["phase"] == "measured"]["send_ts"].min() >= result.profiling_start
    for lane in range(3):  # primers: the turn before t* of every stream alive at t*
        plan = build_plan(traces[lane % 2])
        sp = start_point(plan, start_seed(1, plan.trace.id, lane), 0.25, 0.75)
        assert result.start_points[lane] == sp.t
        mine = primers[primers["session"] == f"L{lane}S1"]
        want = {("", sp.root_next - 1)} if sp.root_next else set()
        for b in plan.branches:
            for c in b.children:
                k = next_turn(c, sp.t)
                if b.spawn < sp.root_next and k:
                    want.add((c.name, k - 1))
        assert set(zip(mine["agent"], mine["turn"], strict=True)) == want
    # each stream goes on from its primer: consecutive turns, never one twice
    seen = check_structure(df, {t.id: t for t in traces}, tree_cap=0.5, idle_cap=0.2,
                           exact=False)
    assert seen["requests"] >= 3 * (n + 1)


def test_replay_follows_the_recorded_structure(scripted_server, smollm2_tokenizer):
    traces = scaled("trace_0277", "trace_0026")
    lanes = 3
    s = ReplaySettings(duration_s=3, idle_cap_s=0.3, tree_cap_s=0.3, warmup_requests_per_lane=2)
    result = replay(scripted_server, smollm2_tokenizer, traces, lanes, s)
    df = frame(result.records)
    assert (df["phase"] == "probe").sum() == 2 * lanes
    seen = check_structure(df, {t.id: t for t in traces}, tree_cap=0.3, idle_cap=0.3,
                           exact=False)
    assert seen["requests"] >= 15 and seen["gaps"] >= 5, seen
    kept = df[(df["phase"] == "measured") & (df["error"] == "")]
    # the measured window: first kept send to last kept end (AgentX's throughput window)
    assert result.start_ts == kept["send_ts"].min() and result.end_ts == kept["end_ts"].max()
