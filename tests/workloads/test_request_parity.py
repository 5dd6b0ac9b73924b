"""Fixed-sequence requests as InferenceX's client sends them: the same body fields with the
same values (utils/bench_serving/backend_request_func.py, docs/upstream/inferencex.md §3.1),
prompts built as its random dataset builds them (§3.2), warmups as copies of the first prompt."""

from __future__ import annotations

import numpy as np
import orjson

from harness.config.compose import compose_sweep
from harness.sweep.runner import plan_points
from harness.workloads.fixed_seq import FixedSequenceWorkload, stream_body
from harness.workloads.inferencex_prompts import InferenceXPromptBuilder

# backend_request_func.py, async_request_openai_completions / ..._chat_completions
UPSTREAM_COMPLETIONS = {"model", "prompt", "temperature", "best_of", "max_tokens", "logprobs",
                        "stream", "stream_options", "ignore_eos"}
UPSTREAM_CHAT = {"model", "messages", "temperature", "max_completion_tokens", "stream",
                 "stream_options", "ignore_eos"}


def _bodies(tok, *overrides: str) -> tuple[list[dict], list[dict]]:
    sc = compose_sweep(["run_id=u", "concurrency=[2]", "scenario.requests_per_conc=2",
                        "scenario.warmup_per_conc=2", *overrides])
    wl = FixedSequenceWorkload(sc, tok)
    [level] = [p.level for p in plan_points(sc)]
    wl.prepare([level], stream_body("m", dict(sc.scenario.sampling), {}))
    reqs = wl.requests[level.point_id]
    return ([orjson.loads(s.body) for s in reqs.warmup],
            [orjson.loads(s.body) for s in reqs.measured])


def test_a_completions_body_equals_upstreams_field_for_field(smollm2_tokenizer) -> None:
    _, measured = _bodies(smollm2_tokenizer, "scenarios=fixed-1k1k", "scenario.isl=64",
                          "scenario.osl=16")
    for b in measured:
        assert set(b) == UPSTREAM_COMPLETIONS
        assert b["temperature"] == 0.0 and b["best_of"] == 1 and b["logprobs"] is None
        assert b["stream"] is True and b["stream_options"] == {"include_usage": True}
        assert b["ignore_eos"] is True and 12 <= b["max_tokens"] <= 16


def test_a_chat_body_equals_upstreams_field_for_field(smollm2_tokenizer) -> None:
    _, measured = _bodies(smollm2_tokenizer, "scenarios=fixed-1k1k", "scenario.isl=64",
                          "scenario.osl=16", "scenario.api=chat")
    for b in measured:
        assert set(b) == UPSTREAM_CHAT
        [turn] = b["messages"]
        assert turn["role"] == "user" and turn["content"][0]["type"] == "text"
        assert b["temperature"] == 0.0 and 12 <= b["max_completion_tokens"] <= 16


def test_warmups_are_copies_of_the_first_prompt_unless_asked(smollm2_tokenizer) -> None:
    warm, measured = _bodies(smollm2_tokenizer, "scenarios=fixed-1k1k", "scenario.isl=64",
                             "scenario.osl=16")
    assert len(warm) == 4 and all(w == measured[0] for w in warm)
    warm, measured = _bodies(smollm2_tokenizer, "scenarios=fixed-1k1k", "scenario.isl=64",
                             "scenario.osl=16", "scenario.warmup_prompts=distinct")
    assert len({w["prompt"] for w in warm + measured}) == len(warm) + len(measured)


def test_prompts_are_consecutive_ids_from_a_random_offset(smollm2_tokenizer) -> None:
    tok = smollm2_tokenizer
    b = InferenceXPromptBuilder(tok, "completions", False)
    rng = np.random.default_rng(0)
    v = b.vocab_size
    shared = []
    for i in range(20):
        probe = np.random.default_rng()
        probe.bit_generator.state = rng.bit_generator.state  # the offset the build will draw
        offset = int(probe.integers(0, v))
        text, expected = b.build(rng, 200)
        want = [(offset + i + j) % v for j in range(200)]
        got = tok.encode(text, add_special_tokens=False)
        window = set(want)
        shared.append(sum(t in window for t in got) / len(got))
        assert expected == len(tok(text)["input_ids"])  # measured, not assumed
    # decode/re-encode merges a few neighbours and patches the length with random ids; most
    # tokens are still the consecutive run from the offset
    assert np.median(shared) >= 0.7, shared


def test_the_chat_template_length_is_taken_off_as_upstream_does(smollm2_tokenizer) -> None:
    tok = smollm2_tokenizer
    b = InferenceXPromptBuilder(tok, "completions", True)
    t = tok.apply_chat_template([{"role": "user", "content": "a"}], tokenize=False,
                                add_generation_prompt=True)
    assert b.template_overhead() == len(tok.encode(t, add_special_tokens=False)) - 1 > 0
    text, expected = b.build(np.random.default_rng(1), 300)
    rendered = b.render(text)
    assert rendered.endswith(tok.apply_chat_template(
        [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)[-20:])
    assert abs(expected - 300) <= 3  # upstream's length, within what re-encoding shifts
