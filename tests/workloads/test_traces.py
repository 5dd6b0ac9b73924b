"""Trace loaders, their error messages, statistics, fitting."""

from __future__ import annotations

import json

import pytest

from harness.workloads.traces import TraceError, load_traces
from harness.workloads.traces.fit import Fit, fit_traces
from harness.workloads.traces.stats import trace_hit_rate, trace_stats
from tests.helpers import harness

WEKA = "scenarios/traces/weka-cc-traces"
MOONCAKE = "scenarios/traces/mooncake/conversation_trace.head300.jsonl"
AZURE = "scenarios/traces/azure-llm-2023/AzureLLMInferenceTrace_code.head500.csv"


def test_shipped_traces_load_with_their_structure() -> None:
    t277 = load_traces(f"{WEKA}/trace_0277.json")[0]
    assert (len(t277.requests()), len(t277.subagents()), t277.block_size) == (53, 4, 64)
    assert [s.kind for s in t277.subagents()] == ["Explore", "Explore", "Explore", "Plan"]
    moon = load_traces(MOONCAKE)
    assert len(moon) == 300 and moon[0].block_size == 512 and moon[0].shared_scope
    az = load_traces(AZURE)
    assert len(az) == 500 and az[1].requests()[0].t == pytest.approx(0.052)


def _independent_hit_rate(seqs):
    """Brute force: for each request, the longest prefix shared with any earlier request."""
    hit = total = 0
    seen: list[list] = []
    for ids, n_in, bs in seqs:
        best = 0
        for old in seen:
            k = 0
            while k < min(len(old), len(ids)) and old[k] == ids[k]:
                k += 1
            best = max(best, k)
        hit += min(best * bs, n_in)
        total += n_in
        seen.append(ids)
    return hit / total


@pytest.mark.parametrize(("path", "published"), [
    (f"{WEKA}/trace_0026.json", 0.62), (f"{WEKA}/trace_0277.json", 0.87), (MOONCAKE, 0.08)])
def test_theoretical_hit_rate_matches_published_and_an_independent_recount(path, published):
    traces = load_traces(path)
    rate = trace_hit_rate(traces)
    assert rate == pytest.approx(published, abs=0.005)
    seqs = [([(None if t.shared_scope else t.id, h) for h in r.hash_ids], r.in_tokens,
             t.block_size) for t in traces for r in t.requests()]
    assert rate == pytest.approx(_independent_hit_rate(seqs), abs=1e-12)


def test_stats_cli() -> None:
    r = harness("traces", "stats", f"{WEKA}/trace_0277.json", MOONCAKE)
    assert r.returncode == 0, r.stderr
    assert "sessions 1, requests 53, sub-agents 4" in r.stdout
    assert "theoretical prefix-hit rate (infinite cache, listed order): 0.873" in r.stdout
    assert "sessions 300, requests 300" in r.stdout
    s = trace_stats(load_traces(f"{WEKA}/trace_0026.json"))
    assert s.think_s["max"] == 48.0 and s.isl["max"] == 20068


def test_scale_keeps_structure_and_cap_drops_long_requests() -> None:
    t = load_traces(f"{WEKA}/trace_0277.json")
    scaled = fit_traces(t, Fit("scale", 64))[0]
    assert scaled.block_size == 1 and len(scaled.requests()) == 53
    assert scaled.requests()[0].in_tokens == round(19560 / 64)
    assert [r.hash_ids for r in scaled.requests()] == [r.hash_ids for r in t[0].requests()]
    assert [r.think for r in scaled.requests()] == [r.think for r in t[0].requests()]
    capped = fit_traces(t, Fit("cap", cap_tokens=60000))[0]
    assert all(r.in_tokens + r.out_tokens <= 60000 for r in capped.requests())
    assert 0 < len(capped.requests()) < 53
    with pytest.raises(TraceError, match="not divisible by scale factor 3"):
        fit_traces(t, Fit("scale", 3))


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD_REQ = {"t": 0, "type": "n", "in": 100, "out": 10, "hash_ids": [1, 2]}


@pytest.mark.parametrize(("trace", "where", "field", "problem"), [
    ({"id": "x", "block_size": 64, "requests": [{**GOOD_REQ, "in": "many"}]},
     "trace x, requests[0]", "in", "expected an integer"),
    ({"id": "x", "block_size": 64, "requests": [{k: v for k, v in GOOD_REQ.items() if k != "out"}]},
     "trace x, requests[0]", "out", "missing"),
    ({"id": "x", "block_size": 64, "requests": [{**GOOD_REQ, "hash_ids": ["a"]}]},
     "requests[0]", "hash_ids", "list of integers"),
    ({"id": "x", "block_size": 64, "requests": [{**GOOD_REQ, "type": "zz"}]},
     "requests[0]", "type", "unknown type"),
    ({"id": "x", "requests": [GOOD_REQ]}, "trace x", "block_size", "missing"),
    ({"id": "x", "block_size": 64, "requests": [
        {"t": 5, "type": "subagent", "agent_id": "a1", "requests": [{**GOOD_REQ, "t": -1}]}]},
     "requests[0] (a1), requests[0]", "t", "below 0"),
])
def test_malformed_weka(tmp_path, trace, where, field, problem) -> None:
    p = _write(tmp_path, "t.json", json.dumps(trace))
    with pytest.raises(TraceError) as ei:
        load_traces(p, "weka")
    e = ei.value
    assert e.path == str(p) and where in e.where and e.field_name == field
    assert problem in str(e) and "Fix:" in str(e)


def test_malformed_weka_jsonl_names_the_line(tmp_path) -> None:
    good = json.dumps({"id": "a", "block_size": 64, "requests": [GOOD_REQ]})
    p = _write(tmp_path, "t.jsonl", good + "\n" + good[:-5] + "\n")
    with pytest.raises(TraceError) as ei:
        load_traces(p, "weka")
    assert ei.value.where == "line 2" and "not valid JSON" in str(ei.value)


@pytest.mark.parametrize(("line", "field"), [
    ('{"timestamp": 0, "input_length": 5, "hash_ids": [1]}', "output_length"),
    ('{"timestamp": 0, "input_length": -5, "output_length": 1, "hash_ids": [1]}',
     "input_length"),
    ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": 7}', "hash_ids"),
    ('{"timestamp": 0, "input_len', "(json)"),
])
def test_malformed_mooncake(tmp_path, line, field) -> None:
    good = '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}'
    p = _write(tmp_path, "m.jsonl", good + "\n" + line + "\n")
    with pytest.raises(TraceError) as ei:
        load_traces(p, "mooncake")
    assert ei.value.where == "line 2" and ei.value.field_name == field


@pytest.mark.parametrize(("text", "where", "field"), [
    ("TIMESTAMP,Context,GeneratedTokens\n2023-11-16 18:17:03.97,5,1\n", "line 1 (header)",
     "ContextTokens"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,5,1\n", "line 2", "TIMESTAMP"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,5,1\n"
     "2023-11-16 18:17:04.00,five,1\n", "line 3", "ContextTokens"),
])
def test_malformed_azure(tmp_path, text, where, field) -> None:
    p = _write(tmp_path, "a.csv", text)
    with pytest.raises(TraceError) as ei:
        load_traces(p, "azure")
    assert ei.value.where == where and ei.value.field_name == field


def test_missing_file_is_a_trace_error(tmp_path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        load_traces(tmp_path / "nope.json")


def _misplaced_trace() -> dict:
    return {"id": "t1", "block_size": 64, "requests": [
        {"t": 0, "type": "n", "in": 100, "out": 10, "hash_ids": [1, 2]},
        {"t": 1, "type": "subagent", "agent_id": "a1", "think_time": 1.5,
         "requests": [{"t": 1, "type": "n", "in": 80, "out": 5, "hash_ids": [3],
                       "agent_id": "wrong"}]},
        {"t": 2, "type": "subagent", "agent_id": "a2", "think_time": 3,
         "requests": [{"t": 2, "type": "n", "in": 80, "out": 5, "hash_ids": [4]}]},
    ]}


def test_fields_of_another_kind_are_named_once_outside_strict(tmp_path, caplog) -> None:
    """A request's think_time on a sub-agent is read by nobody: never accepted
    silently. Outside strict a warning names the field and its first entry, once."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_misplaced_trace()))
    with caplog.at_level("WARNING"):
        load_traces(path)
    msgs = [r.getMessage() for r in caplog.records]
    think = [m for m in msgs if "'think_time' is a field of a request, not of a sub-agent" in m]
    assert len(think) == 1 and "requests[1]" in think[0], msgs
    agent = [m for m in msgs if "'agent_id' is a field of a sub-agent, not of a request" in m]
    assert len(agent) == 1, msgs


def test_fields_of_another_kind_are_errors_in_strict() -> None:
    from harness.workloads.traces.weka import parse_trace

    with pytest.raises(TraceError) as e:
        parse_trace(_misplaced_trace(), "t.json", "whole file", strict=True)
    assert "think_time" in str(e.value) and "requests[1]" in str(e.value)


def _weka(**request: object) -> str:
    return json.dumps({"id": "x", "block_size": 64, "totals": {"parent_tokens": {"input": 100}},
                       "requests": [GOOD_REQ, {**GOOD_REQ, "t": 1, **request}]})


def _weka_subagent(**fields: object) -> str:
    return json.dumps({"id": "x", "block_size": 64, "requests": [
        GOOD_REQ, {"t": 1, "type": "subagent", "agent_id": "a1", **fields,
                   "requests": [{**GOOD_REQ, "t": 1}]}]})


MOONCAKE_GOOD = '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}'
AZURE_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,5,1\n"

# (file name, text, where the error must point, field, words of the problem)
NUMERIC_CASES = [
    ("nan_think.json", _weka(think_time=float("nan")), "requests[1]", "think_time", "nan"),
    ("inf_api.json", _weka(api_time=float("inf")), "requests[1]", "api_time", "inf"),
    ("huge_think.json", _weka(think_time=1e300), "requests[1]", "think_time", "above"),
    ("neg_think.json", _weka(think_time=-2), "requests[1]", "think_time", "below 0"),
    ("nan_ttft.json", _weka(type="s", ttft=float("nan")), "requests[1]", "ttft", "nan"),
    ("huge_in.json", _weka(**{"in": 10**400}), "requests[1]", "in", "above"),
    ("neg_hash.json", _weka(hash_ids=[1, -5]), "requests[1]", "hash_ids", "-5"),
    ("bool_hash.json", _weka(hash_ids=[True]), "requests[1]", "hash_ids", "integers"),
    ("nan_totals.json", json.dumps({"id": "x", "block_size": 64, "requests": [GOOD_REQ],
                                    "totals": {"parent_tokens": {"input": float("nan")}}}),
     "trace x", "totals.parent_tokens.input", "nan"),
    # a request's field on a sub-agent is ignored with a warning, but never when it is NaN
    ("nan_sub_think.json", _weka_subagent(think_time=float("nan")), "requests[1]",
     "think_time", "nan"),
    ("inf_sub_duration.json", _weka_subagent(duration_ms=float("inf")), "requests[1]",
     "duration_ms", "inf"),
    ("neg_sub_tokens.json", _weka_subagent(total_tokens=-1), "requests[1]", "total_tokens",
     "below 0"),
    ("huge_ts.jsonl", MOONCAKE_GOOD + '\n{"timestamp": 1e400, "input_length": 5, '
     '"output_length": 1, "hash_ids": [1]}\n', "line 2", "timestamp", "inf"),
    ("late_ts.jsonl", MOONCAKE_GOOD + '\n{"timestamp": 9999999999999, "input_length": 5, '
     '"output_length": 1, "hash_ids": [1]}\n', "line 2", "timestamp", "9999999999999"),
    ("neg_hash.jsonl", MOONCAKE_GOOD + '\n{"timestamp": 1, "input_length": 5, '
     '"output_length": 1, "hash_ids": [-1]}\n', "line 2", "hash_ids", "-1"),
    ("huge_ctx.csv", AZURE_HEAD + "2023-11-16 18:17:04.00,999999999999,1\n", "line 3",
     "ContextTokens", "999999999999"),
    ("far_ts.csv", AZURE_HEAD + "2025-11-16 18:17:04.00,5,1\n", "line 3", "TIMESTAMP",
     "days after"),
]


@pytest.mark.parametrize(("name", "text", "where", "field", "problem"), NUMERIC_CASES,
                         ids=[c[0] for c in NUMERIC_CASES])
def test_every_numeric_field_is_finite_and_in_range_through_the_cli(
        tmp_path, name, text, where, field, problem) -> None:
    """`harness traces stats` reads a trace as a sweep does (the same loaders): a NaN, an
    infinity or an absurd value is one line naming file, entry, field and fix, exit 2."""
    p = _write(tmp_path, name, text)
    r = harness("traces", "stats", str(p))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    line, = r.stderr.splitlines()
    assert str(p) in line and where in line and f"field '{field}'" in line, line
    assert problem in line and "Fix:" in line, line


def test_a_trace_within_every_limit_still_loads(tmp_path) -> None:
    p = _write(tmp_path, "ok.json", _weka(think_time=2.5, api_time=1.0, type="s", ttft=0.3))
    r = harness("traces", "stats", str(p))
    assert r.returncode == 0, r.stderr
    assert "requests 2" in r.stdout
