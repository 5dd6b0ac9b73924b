"""DeepSeek-V4's prompts as InferenceX's `--dsv4` client builds them: its tokenizer has no chat
template, so the user turn is rendered by DeepSeek-V4's own encoder
(SemiAnalysisAI/InferenceX:infx/bench_serving/encoding_dsv4.py@ca4b9c321a12888f71d8376203154ff92a6afa74,
`encode_messages([user], thinking_mode="thinking")`), and the template length taken off the
target is measured on that encoding. The embedded model's tokenizer stands in for DeepSeek's
(not available offline): the framing and the arithmetic are what is checked."""

from __future__ import annotations

import numpy as np
import pytest

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.launches import launches
from harness.workloads.fixed_seq import FixedSequenceWorkload
from harness.workloads.inferencex_prompts import InferenceXPromptBuilder, dsv4_user_turn


def test_one_user_turn_is_framed_as_the_dsv4_encoder_writes_it() -> None:
    # bos, <｜User｜>, the text as one text block, then <｜Assistant｜><think> (thinking mode,
    # the last user turn) - written out by code point so no look-alike character slips in
    bos = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
    assert dsv4_user_turn("hi there") == (
        f"{bos}<\uff5cUser\uff5c>hi there<\uff5cAssistant\uff5c><think>")


def test_builder_takes_the_encoders_length_off_and_renders_with_it(smollm2_tokenizer) -> None:
    tok = smollm2_tokenizer
    b = InferenceXPromptBuilder(tok, "completions", chat_template=True, encoder="dsv4")
    overhead = len(tok.encode(dsv4_user_turn("a"), add_special_tokens=False)) - 1
    assert b.template_overhead() == overhead > 0
    plain = InferenceXPromptBuilder(tok, "completions", chat_template=True)
    assert plain.template_overhead() != overhead  # the tokenizer's own template differs
    text, counted = b.build(np.random.default_rng(0), 256)
    assert b.render(text) == dsv4_user_turn(text)
    assert counted == len(tok(dsv4_user_turn(text))["input_ids"])
    chat = InferenceXPromptBuilder(tok, "chat", chat_template=True, encoder="dsv4")
    text, counted = chat.build(np.random.default_rng(0), 256)
    assert counted == len(tok.encode(dsv4_user_turn(text), add_special_tokens=False))


def test_dsv4_mtp_recipes_build_their_prompts_with_the_encoder(smollm2_tokenizer) -> None:
    for name in ("dsv4-fp8-h200-sglang-mtp", "dsv4-fp4-b200-vllm-mtp", "dsv4-fp8-h200-vllm"):
        sc = launches(compose_sweep([f"recipe={name}"]))[0].sc
        builder = FixedSequenceWorkload(sc, smollm2_tokenizer).builder()
        assert isinstance(builder, InferenceXPromptBuilder) and builder.encoder == "dsv4"
        # MTP: templated (upstream --use-chat-template --dsv4); without a speculator: raw text
        assert builder.chat_template == name.endswith("-mtp")
        assert builder.render("x") == (dsv4_user_turn("x") if builder.chat_template else "x")


def test_chat_encoder_choices_are_checked() -> None:
    with pytest.raises(ConfigError, match="unknown chat encoder"):
        compose_sweep(["model.chat_encoder=jinja"])
    from harness.workloads.registry import check_kinds

    with pytest.raises(ConfigError, match=r"scenario\.prompts"):  # the fixed workload's rule
        check_kinds(compose_sweep(["recipe=dsv4-fp8-h200-sglang-mtp",
                                   "scenario.prompts=filtered"]), lambda key: "the override")
