"""Prompts built with our tokenizer are token-for-token what the embedded engine tokenizes."""

from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest

from harness.config.compose import compose_sweep
from harness.engines.llamacpp import LlamaCppAdapter
from harness.engines.session import EngineSession
from harness.workloads.fixed_seq import PromptBuilder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory):
    """One embedded engine for the module: both tests only ask it to tokenize."""
    launch = tmp_path_factory.mktemp("tok")
    with EngineSession(LlamaCppAdapter(compose_sweep([])), launch, "tok", 1) as eng:
        yield eng.base_url


def _server_tokens(url: str, text: str) -> list[int]:
    req = urllib.request.Request(url + "/tokenize", json.dumps({"content": text}).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["tokens"]


def test_random_prompts_tokenize_identically_on_the_server(engine_url, smollm2_tokenizer):
    builder = PromptBuilder.for_tokenizer(smollm2_tokenizer, "completions", False)
    rng = np.random.default_rng(2026)
    prompts = [builder.build(rng, int(n))[0] for n in rng.integers(60, 400, 200)]
    for text in prompts:
        server = _server_tokens(engine_url, text)
        assert server == smollm2_tokenizer(text)["input_ids"], text[:200]


# The sequence that broke a real run: Hugging Face keeps these four tokens, llama.cpp merges
# the whitespace into one ("\r\n        \r\n       "): the server counted 3 tokens fewer.
CLASH = [18850, 201, 15537, 216]


def test_the_whitespace_clash_is_real_and_cannot_be_drawn(engine_url, smollm2_tokenizer):
    text = "pedestrians" + smollm2_tokenizer.decode(CLASH) + "5 Habits"
    server = _server_tokens(engine_url, text)
    assert len(server) < len(smollm2_tokenizer(text)["input_ids"])  # the hazard exists
    vocab = set(PromptBuilder.for_tokenizer(smollm2_tokenizer, "completions", False)
                .vocab.tolist())
    assert not vocab & set(CLASH)  # ...and random prompts can no longer contain it
