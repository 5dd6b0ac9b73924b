"""Agentic chat bodies on the embedded llama.cpp engine: the server counts exactly the prompt
tokens we expect (chat template, marker and all), and its prefix cache hits at least what the
theoretical rate over the blocks we sent says, less 5 points."""

from __future__ import annotations

import pytest

from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.config.compose import compose_sweep
from harness.engines.hints import EngineHints
from harness.engines.llamacpp import LlamaCppAdapter
from harness.engines.session import EngineSession
from harness.workloads.agentic_bodies import AgenticBodies, replayed_hit_rates
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay_context import ReplayContext
from harness.workloads.traces import load_traces
from harness.workloads.traces.fit import Fit, fit_traces
from harness.workloads.traces.model import TraceRequest

pytestmark = pytest.mark.slow
W = "scenarios/traces/weka-cc-traces"


def _send_all(url: str, specs) -> list:
    async def go():
        async with StreamingClient(ClientSettings(url)) as c:
            return [await c.send(s) for s in specs]  # one at a time: one slot, one cache
    return run_async(go())


def test_chat_prompts_are_exact_and_the_cache_hits_what_is_shared(tmp_path, smollm2_tokenizer):
    trace = fit_traces(load_traces(f"{W}/trace_0277.json"), Fit("scale", 64))[0]
    body = {"stream": True, "stream_options": {"include_usage": True}, "temperature": 0}
    bodies = AgenticBodies(BlockPrompts(smollm2_tokenizer, 5), body, 0, "chat")
    sub = trace.subagents()[0]
    # two sessions of one trace (two lanes) share the system prefix and nothing after the
    # marker; each session's turns share their history. llama.cpp keeps one prompt per slot
    # (one slot here), not an infinite cache: the order keeps each shared prefix in the slot.
    ctxs = [ReplayContext(lane, f"L{lane}S1", ("pt", f"L{lane}S1"), trace) for lane in (0, 1)]
    subs = [ReplayContext(c.lane, c.session, c.salt, trace, path=sub.agent_id) for c in ctxs]
    sub_turns = [r for r in sub.items if isinstance(r, TraceRequest)][:2]
    specs = [bodies.spec(r, c, max_tokens=2) for c in ctxs for r in trace.parent_requests()[:2]]
    specs += [bodies.spec(r, c, max_tokens=2) for c in subs for r in sub_turns]
    hints = EngineHints(prefix_caching=True, longest_request_tokens=4096)
    with EngineSession(LlamaCppAdapter(compose_sweep([]), hints=hints), tmp_path, "ag", 1) as eng:
        records = _send_all(eng.base_url, specs)
    assert all(r.ok for r in records), [r.error for r in records if not r.ok]
    assert [r.prompt_tokens for r in records] == [s.expected_prompt_tokens for s in specs]
    rates = replayed_hit_rates(records)
    assert 0.3 < rates["theoretical_hit_rate"] < 0.95, rates
    assert rates["server_hit_rate"] >= rates["theoretical_hit_rate"] - 0.05, rates
