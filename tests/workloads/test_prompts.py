"""Prompts from hash ids: deterministic blocks, exact lengths, exact prefix sharing."""

from __future__ import annotations

import numpy as np
import pytest

from harness.workloads.fixed_seq import PromptBuilder
from harness.workloads.prompts import BlockPrompts


@pytest.fixture(scope="module")
def prompts(smollm2_tokenizer):
    return BlockPrompts(smollm2_tokenizer, seed=7)


def test_same_id_same_tokens_different_ids_differ(prompts) -> None:
    a = prompts.block_ids("s", 5, 64)
    assert np.array_equal(a, prompts.block_ids("s", 5, 64))
    assert not np.array_equal(a, prompts.block_ids("s", 6, 64))
    assert not np.array_equal(a, prompts.block_ids("other-session", 5, 64))  # cache-bust


@pytest.mark.parametrize("in_tokens", [1, 63, 64, 65, 300, 1000])
def test_exact_token_counts(prompts, smollm2_tokenizer, in_tokens) -> None:
    ids = list(range(20))
    text = prompts.prompt("s", ids, 64, in_tokens, pad_key="r")
    assert len(smollm2_tokenizer.encode(text, add_special_tokens=False)) == in_tokens


def test_shared_hash_prefixes_give_identical_token_prefixes(prompts, smollm2_tokenizer) -> None:
    enc = lambda t: smollm2_tokenizer.encode(t, add_special_tokens=False)  # noqa: E731
    turn1 = enc(prompts.prompt("s", [1, 2, 3], 16, 40, pad_key="a"))
    turn2 = enc(prompts.prompt("s", [1, 2, 3, 4, 5], 16, 80, pad_key="b"))
    assert turn2[:40] == turn1  # the partial third block is a prefix of the full one
    other = enc(prompts.prompt("s", [1, 9, 3], 16, 48, pad_key="c"))
    assert other[:16] == turn1[:16] and other[16:32] != turn1[16:32]


def test_more_tokens_than_listed_blocks_is_padded_exactly(prompts, smollm2_tokenizer) -> None:
    text = prompts.prompt("s", [1], 16, 50, pad_key="r")
    assert len(smollm2_tokenizer.encode(text, add_special_tokens=False)) == 50


def test_fixed_sequence_prompts_are_exact_with_and_without_chat_template(
        smollm2_tokenizer) -> None:
    rng = np.random.default_rng(3)
    for api, template in (("completions", False), ("completions", True), ("chat", True)):
        b = PromptBuilder.for_tokenizer(smollm2_tokenizer, api, template)
        for n in (100, 513):
            text, got = b.build(rng, n)
            assert got == n and b.count(text) == n
