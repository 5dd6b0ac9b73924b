"""The four rules our agentic replay shares with AIPerf's (docs/replay.md), on the
committed traces: where each lane starts (t*), which trace a lane recycles to, when a sub-agent
starts, and what each request carries. Each upstream rule is the default; the earlier rule is
a named setting and is checked to still be what it was."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import numpy as np
import orjson
import pytest

from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.testing.spawn import spawn_server
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.replay import Replayer, ReplaySettings
from harness.workloads.replay_plan import build_plan, child_offsets, start_point, start_seed
from harness.workloads.replay_sessions import TraceSampler
from harness.workloads.traces.model import Trace, TraceRequest
from tests.helpers import loopback_app
from tests.workloads.replay_checks import frame
from tests.workloads.test_replay import block_prompts, from_turn_0, replay, scaled


def _upstream_t_star(seed: int, trace_id: str, lane: int, plan, lo=0.25, hi=0.75) -> float:
    """SemiAnalysisAI/aiperf trajectory_source.py@996eca9d (`_seed_for_trace_lane`,
    `_build_timestamped_trajectory`), written out: the first 8 bytes of
    sha256(f"{seed}:{trace}:{lane}") seed numpy's default_rng, which draws t* uniformly in
    milliseconds between start + lo * span and start + hi * span."""
    digest = hashlib.sha256(f"{seed}:{trace_id}:{lane}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    a, b = plan.span()
    start, span = a * 1000.0, (b - a) * 1000.0
    return float(rng.uniform(start + lo * span, start + hi * span)) / 1000.0


def test_each_lanes_t_star_is_upstreams_hash_rule():
    plans = {n: build_plan(scaled(n)[0]) for n in ("trace_0277", "trace_0026")}
    for name, plan in plans.items():
        for lane in range(4):
            sp = start_point(plan, start_seed(42, name, lane), 0.25, 0.75)
            assert sp.t == pytest.approx(_upstream_t_star(42, name, lane, plan), abs=1e-9)
    # trace_0277 at concurrency 2, seed 42: AIPerf 0.13.0 was seen starting its lane 1 at
    # 313.10 s; our earlier rule started lane 0 at 470.68 s
    p77 = plans["trace_0277"]
    assert start_point(p77, start_seed(42, "trace_0277", 1), 0.25, 0.75).t == pytest.approx(
        313.10, abs=0.005)
    earlier = start_point(p77, start_seed(42, "trace_0277", 0, "trace"), 0.25, 0.75)
    assert earlier.t == pytest.approx(470.68, abs=0.005)


def test_lanes_recycle_through_one_shared_order():
    shared = TraceSampler(3)
    assert [shared.first(lane) for lane in range(2)] == [0, 1]
    # whichever lane finishes, it takes the next trace of the one sequence
    assert [shared.recycle(current) for current in (0, 0, 1, 2, 1)] == [2, 0, 1, 2, 0]
    own = TraceSampler(3, "per_lane")  # our earlier rule: each lane steps from its own trace
    assert [own.first(lane) for lane in range(2)] == [0, 1]
    assert [own.recycle(current) for current in (0, 1, 1)] == [1, 2, 2]


def _tiny(tid: str) -> Trace:
    return Trace(tid, "test", 1, [TraceRequest(0.0, 2, 2, [1, 2], api_time=0.01),
                                  TraceRequest(0.02, 3, 2, [1, 2, 3], api_time=0.01)])


def test_recycled_trees_follow_the_shared_order(fast_server, smollm2_tokenizer):
    traces = [_tiny(f"t{i}") for i in range(3)]
    result = replay(fast_server, smollm2_tokenizer, traces, 2, from_turn_0(duration_s=1.0))
    order = [tid for _, tid in result.trees]
    assert len(order) >= 6, order
    assert order == [f"t{i % 3}" for i in range(len(order))]  # one sequence across lanes
    assert {lane for lane, _ in result.trees} == {0, 1}


def test_non_overlapping_subagents_start_when_their_spawn_turn_returns():
    plan = build_plan(scaled("trace_0277")[0])
    by_id = {b.id: b for b in plan.branches}
    # spawned by the root's first turn (ends 18.8 s), both after it: at once, and agent_003
    # (one branch with agent_002, first request 27.4 s after it) at its offset
    assert child_offsets(plan, by_id["spawn:agent_001"]) == [0.0]
    assert child_offsets(plan, by_id["spawn:agent_002"]) == pytest.approx([0.0, 27.44],
                                                                         abs=0.005)
    assert child_offsets(plan, by_id["spawn:agent_004"]) == [0.0]
    # the earlier rule: the recorded gap after the spawn turn's end
    assert child_offsets(plan, by_id["spawn:agent_001"], "spawn_end") == pytest.approx(
        [60.44], abs=0.005)
    assert child_offsets(plan, by_id["spawn:agent_002"], "spawn_end") == pytest.approx(
        [165.13, 192.57], abs=0.005)


@pytest.mark.parametrize("rule", ["branch_start", "spawn_end"])
def test_subagents_first_send_after_the_spawn_turn(fast_server, smollm2_tokenizer, rule):
    s = from_turn_0(duration_s=1.2, idle_cap_s=0.5, tree_cap_s=0.5, subagent_start=rule)
    df = frame(replay(fast_server, smollm2_tokenizer, scaled("trace_0277"), 1, s).records)
    t = df[df["session"] == "L0S1"]
    root0 = t[(t["agent"] == "") & (t["turn"] == 0)].iloc[0]
    first = {a: t[t["agent"] == a]["send_ts"].min() for a in ("agent_001", "agent_002")}
    gaps = {a: v - root0["end_ts"] for a, v in first.items()}
    if rule == "branch_start":  # within a few ms of the spawn turn's end, side by side
        # a few ms on a quiet machine (body built, then sent); 0.1 s leaves room for a
        # loaded VM and stays far under the 0.5 s that the earlier rule's cut wait takes
        assert all(0 <= g < 0.1 for g in gaps.values()), gaps
        a1 = t[t["agent"] == "agent_001"]
        assert first["agent_002"] < a1["end_ts"].max()  # the two overlap
    else:  # 60 s and 165 s, cut by the tree's idle cap: never at once
        assert not any(g < 0.45 for g in gaps.values()), gaps  # NaN: not begun yet


# ---- what a request carries ------------------------------------------------------------


@pytest.fixture(scope="module")
def fast_server() -> Iterator[str]:
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms",
                      "0.5") as port:
        yield f"http://127.0.0.1:{port}"


_SSE = (b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n'
        b"data: [DONE]\n\n")
UPSTREAM_AGENTIC_CHAT = {"model", "messages", "max_completion_tokens", "stream",
                         "stream_options", "ignore_eos"}


def _capture(smollm2_tokenizer, settings: ReplaySettings, cap_field: str,
             body: dict) -> tuple[list[tuple[dict, dict]], list]:
    from aiohttp import web

    seen: list[tuple[dict, dict]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append((dict(request.headers), orjson.loads(await request.read())))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(_SSE)
        await resp.write_eof()
        return resp

    prompts = block_prompts(smollm2_tokenizer)
    traces = scaled("trace_0277", "trace_0026")

    async def go():
        async with (loopback_app("/v1/chat/completions", handler) as url,
                    StreamingClient(ClientSettings(url)) as c):
            bodies = AgenticBodies(prompts, body, 0, "chat", max_tokens_field=cap_field)
            return await Replayer(c, traces, 2, settings, bodies, 42).run()
    return seen, run_async(go()).records


def _is_uuid4(text: str) -> bool:
    return str(uuid.UUID(text)) == text and uuid.UUID(text).version == 4


def test_agentic_requests_carry_aiperfs_fields_and_session_headers(smollm2_tokenizer):
    base = {"model": "m", "stream": True, "stream_options": {"include_usage": True},
            "ignore_eos": True}
    s = from_turn_0(duration_s=1.0, api="chat", warmup_requests_per_lane=1, start_min=0.25,
                    start_max=0.75)
    seen, records = _capture(smollm2_tokenizer, s, "max_completion_tokens", base)
    by_rid = {r.tags["x_request_id"]: r for r in records}
    assert len(seen) == len(records) >= 6
    streams: dict[tuple[str, str], set[str]] = {}
    roots: dict[str, str] = {}
    for headers, body in seen:
        assert set(body) == UPSTREAM_AGENTIC_CHAT, sorted(body)  # no temperature
        rec = by_rid[headers["X-Request-ID"]]
        cap = 1 if rec.phase != "measured" else rec.tags["out"]
        assert body["max_completion_tokens"] == cap
        cid = headers["X-Correlation-ID"]
        assert _is_uuid4(headers["X-Request-ID"]) and _is_uuid4(cid)
        assert headers["X-Session-Affinity"] == cid == rec.tags["x_correlation_id"]
        session, agent = rec.tags["session"], rec.tags["agent"]
        streams.setdefault((session, agent), set()).add(cid)
        root = roots.setdefault(session, rec.tags["root_correlation_id"])
        assert rec.tags["root_correlation_id"] == root
        assert rec.tags["parent_correlation_id"] == (root if agent else None)
        if not agent:
            assert cid == root  # the root stream's id is the tree's
    assert len({h["X-Request-ID"] for h, _ in seen}) == len(seen)  # one per request
    assert all(len(ids) == 1 for ids in streams.values())  # stable per stream
    assert len({next(iter(ids)) for ids in streams.values()}) == len(streams)  # distinct
    recycled = [s for s in roots if not s.endswith("S1")]
    assert recycled and len(set(roots.values())) == len(roots)  # recycled trees: new ids


def test_the_harness_request_style_keeps_the_earlier_fields(smollm2_tokenizer):
    body = {"model": "m", "stream": True, "temperature": 0.0}
    s = from_turn_0(duration_s=0.5, api="chat", request_style="harness")
    seen, _ = _capture(smollm2_tokenizer, s, "max_tokens", body)
    assert seen
    for headers, b in seen:
        assert b["temperature"] == 0.0 and "max_tokens" in b
        assert "max_completion_tokens" not in b
        assert not {"X-Correlation-ID", "X-Session-Affinity"} & set(headers)


def test_tree_affinity_sends_the_roots_id_from_every_stream(smollm2_tokenizer):
    s = from_turn_0(duration_s=1.0, api="chat", session_affinity="tree")
    seen, records = _capture(smollm2_tokenizer, s, "max_completion_tokens", {"model": "m"})
    by_rid = {r.tags["x_request_id"]: r for r in records}
    subs = 0
    for headers, _ in seen:
        rec = by_rid[headers["X-Request-ID"]]
        assert headers["X-Session-Affinity"] == rec.tags["root_correlation_id"]
        subs += bool(rec.tags["agent"])
    assert subs, "a sub-agent request was seen"



# ---- no cap ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "null"])
def test_caps_accept_inf_and_null_for_no_cap(value):
    from harness.config.compose import compose_sweep
    from harness.workloads.agentic_lanes import replay_settings

    sc = compose_sweep(["scenarios=agentic-weka-cpu", f"scenario.tree_cap_s={value}",
                        f"scenario.idle_cap_s={value}"])
    rs = replay_settings(sc.scenario, "scenarios/agentic-weka-cpu.yaml")
    assert rs.tree_cap_s == rs.idle_cap_s == float("inf")


@pytest.mark.parametrize("value", ["-1", "nan", "-inf"])
def test_caps_still_refuse_what_is_not_a_cap(value):
    from harness.config.compose import compose_sweep
    from harness.config.errors import ConfigError

    with pytest.raises(ConfigError, match=r"scenario\.tree_cap_s"):
        compose_sweep(["scenarios=agentic-weka-cpu", f"scenario.tree_cap_s={value}"])


def test_without_caps_nothing_moves_a_timer(fast_server, smollm2_tokenizer):
    # a 0.4 s recorded gap with no cap at all is waited out whole, and no shift is counted
    tr = Trace("g", "test", 1, [TraceRequest(0.0, 2, 2, [1, 2], api_time=0.01),
                                TraceRequest(0.41, 3, 2, [1, 2, 3], api_time=0.01)])
    s = from_turn_0(duration_s=1.0, idle_cap_s=None, tree_cap_s=float("inf"))
    result = replay(fast_server, smollm2_tokenizer, [tr], 1, s)
    t = frame(result.records).set_index(["session", "turn"]).sort_index()
    assert t.loc[("L0S1", 1), "send_ts"] - t.loc[("L0S1", 0), "end_ts"] >= 0.39
    assert not result.jumps.shifts


# ---- the AIPerf-layout export ----------------------------------------------------------


def test_the_export_writes_the_ids_the_request_sent():
    from harness.publish.exports.aiperf_records import Clock, record_metadata
    from harness.records import RequestRecord
    from harness.workloads.replay_sessions import SessionIds

    ids = SessionIds()
    clock = Clock(0.0, 0)
    for agent in ("", "agent_001"):
        headers, tags = ids.request(agent)
        rec = RequestRecord("L0S1/x/0/1", "measured", 1, 1, tags={
            "session": "L0S1", "agent": agent, "trace": "trace_0277", "turn": 0, **tags})
        meta = record_metadata(rec, clock, 0, 0)
        assert meta["x_request_id"] == headers["X-Request-ID"]
        assert meta["x_correlation_id"] == headers["X-Correlation-ID"]
        assert meta["root_correlation_id"] == ids.root
        assert meta["parent_correlation_id"] == (ids.root if agent else None)
        assert meta["agent_depth"] == (1 if agent else 0)
