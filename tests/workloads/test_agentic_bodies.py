"""Agentic request bodies: AgentX's message structure, its cache-bust marker, block identity,
exact prompt counts, and the theoretical hit rate of what was really sent."""

from __future__ import annotations

import math

import orjson
import pytest

from harness.records import PHASE_MEASURED, RequestRecord
from harness.workloads.agentic_bodies import AgenticBodies, replayed_hit_rates
from harness.workloads.block_table import TokenTable, scope_key
from harness.workloads.chat_bodies import ASSISTANT, SYSTEM, USER, structure
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay_context import ReplayContext
from harness.workloads.traces import load_traces
from harness.workloads.traces.fit import Fit, fit_traces
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest

W = "scenarios/traces/weka-cc-traces"
BASE = {"model": "m", "stream": True}


@pytest.fixture(scope="module")
def prompts(smollm2_tokenizer):
    return BlockPrompts(smollm2_tokenizer, seed=3)


@pytest.fixture(scope="module")
def trace():
    return fit_traces(load_traces(f"{W}/trace_0277.json"), Fit("scale", 64))[0]


def _ctx(tr: Trace, lane: int, session: str, path: str = "") -> ReplayContext:
    return ReplayContext(lane, session, ("pt", session), tr, path=path)


def _messages(spec) -> list[dict]:
    return orjson.loads(spec.body)["messages"]


def _sub_requests(sub: SubAgent) -> list[TraceRequest]:
    return [i for i in sub.items if isinstance(i, TraceRequest)]


def test_only_the_first_user_message_carries_the_trees_marker(prompts, trace) -> None:
    bodies = AgenticBodies(prompts, BASE, 0, "chat")
    ctx = _ctx(trace, 0, "L0S1")
    markers = set()
    for r in trace.parent_requests()[:5]:
        msgs = _messages(bodies.spec(r, ctx))
        assert msgs[0]["role"] == SYSTEM and msgs[1]["role"] == USER
        first, *rest = [m for m in msgs if m["role"] == USER]
        assert first["content"].startswith("[rid:") and first["content"][17:20] == "]\n\n"
        markers.add(first["content"][:20])
        assert not any("[rid:" in m["content"] for m in rest + msgs[:1])
        assert {m["role"] for m in msgs} <= {SYSTEM, USER, ASSISTANT}
    for sub in trace.subagents():  # sub-agents share their tree's marker
        msgs = _messages(bodies.spec(_sub_requests(sub)[0], _ctx(trace, 0, "L0S1", sub.agent_id)))
        markers.add(next(m for m in msgs if m["role"] == USER)["content"][:20])
    assert len(markers) == 1
    recycled = _messages(bodies.spec(trace.parent_requests()[0], _ctx(trace, 0, "L0S2")))
    other_lane = _messages(bodies.spec(trace.parent_requests()[0], _ctx(trace, 1, "L1S1")))
    assert recycled[1]["content"][:20] not in markers
    assert other_lane[1]["content"][:20] not in markers | {recycled[1]["content"][:20]}
    # the same hash ids: the same bytes in every session; only the marker differs
    first = _messages(bodies.spec(trace.parent_requests()[0], _ctx(trace, 0, "L0S1")))
    assert recycled[0] == first[0] and recycled[1]["content"][20:] == first[1]["content"][20:]


def test_per_block_salting_and_no_marker_are_named_options(prompts, trace) -> None:
    salted = AgenticBodies(prompts, BASE, 0, "chat", cache_bust="per_block")
    a = _messages(salted.spec(trace.parent_requests()[0], _ctx(trace, 0, "L0S1")))
    b = _messages(salted.spec(trace.parent_requests()[0], _ctx(trace, 0, "L0S2")))
    assert a[0] != b[0] and not any("[rid:" in m["content"] for m in a + b)
    plain = AgenticBodies(prompts, BASE, 0, "chat", cache_bust="none")
    c = _messages(plain.spec(trace.parent_requests()[0], _ctx(trace, 0, "L0S1")))
    d = _messages(plain.spec(trace.parent_requests()[0], _ctx(trace, 1, "L1S1")))
    assert c == d and "[rid:" not in c[1]["content"]
    with pytest.raises(ValueError, match="cache_bust"):
        AgenticBodies(prompts, BASE, 0, "chat", cache_bust="salt")


def test_same_id_same_block_bytes_in_any_table(prompts) -> None:
    one, two = TokenTable(prompts.tokenizer, prompts.vocab), TokenTable(prompts.tokenizer)
    k = scope_key(1, "trace_0277")
    a, b, c = one.join(one.picks(k, [5, 6, 5], 64))
    assert [a, b, c] == two.join(two.picks(k, [5, 6, 5], 64))
    assert a == c != b and a != one.join(one.picks(scope_key(1, "other"), [5], 64))[0]
    assert one.text(one.picks(k, [5, 6], 64)) == a + b
    words = a.split(b" ")[1:]
    assert len(words) == 64 and all(w.isalpha() and w.islower() for w in words)
    ids = prompts.tokenizer.encode(a.decode(), add_special_tokens=False)
    assert len(ids) == 64 and ids == one.token_ids(one.picks(k, [5], 64)[0]).tolist()


def test_a_turn_draws_only_its_new_blocks(prompts, trace) -> None:
    bodies = AgenticBodies(prompts, BASE, 0, "chat")
    ctx = _ctx(trace, 0, "L0S1")
    first, second = trace.parent_requests()[:2]
    one = bodies.spec(first, ctx)
    assert bodies.generated_blocks == len(first.hash_ids)
    two = bodies.spec(second, ctx)
    assert bodies.generated_blocks == len(second.hash_ids)  # the history was kept
    fresh = AgenticBodies(prompts, BASE, 0, "chat", history_bytes=0)
    fresh.spec(first, ctx)
    assert fresh.spec(second, ctx).body == two.body  # rebuilt whole: the same bytes
    assert bodies.spec(first, ctx).body == one.body  # a step back (a probe) rebuilds too


def test_messages_follow_aiperfs_reconstruction() -> None:
    # turn 0: 4 system blocks (200 prefix tokens, 64-token blocks), the rest user + tail
    r0 = TraceRequest(0, 6 * 64 + 10, 130, list(range(6)))
    r1 = TraceRequest(1, 10 * 64 + 5, 40, list(range(10)))  # append: 3 reply blocks, 1 user
    r2 = TraceRequest(2, 8 * 64, 20, [0, 1, 2, 3, 4, 90, 91, 92])  # cut inside the user turn
    reqs = [r0, r1, r2]
    s0, s1, s2 = (structure(reqs, k, 64, 200) for k in range(3))
    assert [(s.role, s.start, s.end) for s in s0] == [(SYSTEM, 0, 4), (USER, 4, 6)]
    assert [(s.role, s.start, s.end) for s in s1] == [
        (SYSTEM, 0, 4), (USER, 4, 6), (ASSISTANT, 6, 9), (USER, 9, 10)]
    assert [(s.role, s.start, s.end) for s in s2] == [
        (SYSTEM, 0, 4), (USER, 4, 5), (ASSISTANT, 5, 6), (USER, 6, 8)]
    assert structure(reqs, 2, 64, 200, start=(1, s1)) == s2  # incremental = from scratch


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_expected_prompt_tokens_are_exact(prompts, trace, api) -> None:
    tok = prompts.tokenizer
    bodies = AgenticBodies(prompts, BASE, 0, api)
    requests = [(r, "") for r in trace.parent_requests()]
    requests += [(r, s.agent_id) for s in trace.subagents()[:2] for r in _sub_requests(s)]
    for r, path in requests:
        spec = bodies.spec(r, _ctx(trace, 0, "L0S1", path))
        body = orjson.loads(spec.body)
        if api == "chat":
            text = tok.apply_chat_template(body["messages"], tokenize=False,
                                           add_generation_prompt=True)
        else:
            text = body["prompt"]
        assert len(tok.encode(text, add_special_tokens=False)) == spec.expected_prompt_tokens
        assert body["max_tokens"] == r.out_tokens and body["model"] == "m"


def _record(spec, send_ts: float, cached: int = -1) -> RequestRecord:
    rec = RequestRecord(spec.request_id, PHASE_MEASURED, spec.expected_prompt_tokens,
                        spec.max_tokens, tags=dict(spec.tags))
    rec.send_ts, rec.end_ts, rec.http_status = send_ts, send_ts + 1, 200
    rec.prompt_tokens, rec.cached_tokens = spec.expected_prompt_tokens, cached
    return rec


def test_theoretical_hit_rate_follows_the_marker(prompts, trace) -> None:
    first = trace.parent_requests()[0]
    system_blocks = math.ceil(trace.prefix_tokens / trace.block_size)
    for mode, shared in (("first_turn_prefix", system_blocks), ("per_block", 0),
                         ("none", len(first.hash_ids))):
        bodies = AgenticBodies(prompts, BASE, 0, "chat", cache_bust=mode)
        recs = [_record(bodies.spec(first, _ctx(trace, lane, f"L{lane}S1")), lane)
                for lane in (0, 1)]
        rate = replayed_hit_rates(recs)["theoretical_hit_rate"]
        assert rate == pytest.approx(shared * trace.block_size / (2 * first.in_tokens)), mode
