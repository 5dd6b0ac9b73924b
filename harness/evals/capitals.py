"""`capitals`: the eval a 135M model passes and a broken engine fails (docs/evals.md).

GSM8K says nothing about SmolLM2-135M: it scores 0 on it, so a floor there cannot fail. This
task asks the capital of 52 countries, zero-shot, through the same path as GSM8K
(lm-eval's `local-chat-completions`, chat template, greedy). The model answers in a sentence
("The capital of Peru is Lima."), so a reply scores 1 when it names the capital (or an
accepted spelling) as a whole word within its first `max_gen_toks` tokens, up to its first
newline. A reply that names no city, a wrong one, or nothing (what a wrong chat template gives)
scores 0; chance is near 0, since the answer is free text.

The data, its origin and licence: data/evals/capitals/README.md.
"""

from __future__ import annotations

import re
from typing import Any

FILE = "test.jsonl"  # {"country", "capital", "aliases": [capital, other spellings]} a line
METRIC = "answer_in_reply"
PROMPT = "What is the capital of {{country}}? Answer with the city name only."


def names_capital(reply: str, aliases: list[str]) -> bool:
    """The reply names one of the accepted spellings as a whole word (case-insensitive)."""
    text = reply.casefold()
    return any(re.search(rf"(?<!\w){re.escape(a.casefold())}(?!\w)", text) for a in aliases)


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    """lm-eval's per-document scorer: one generation in, the metric out."""
    return {METRIC: 1.0 if names_capital(results[0], list(doc["aliases"])) else 0.0}


def capitals_config(dataset: dict[str, Any], num_fewshot: int) -> dict[str, Any]:
    """The task as an lm-eval config; `dataset` is harness.evals.tasks' dataset fields."""
    return {
        "task": "capitals", "output_type": "generate_until", "test_split": "test",
        "doc_to_text": PROMPT, "doc_to_target": "{{capital}}",
        "process_results": process_results,
        "metric_list": [{"metric": METRIC, "aggregation": "mean", "higher_is_better": True}],
        # The sentence ends the answer; a newline means the model has moved on.
        "generation_kwargs": {"until": ["</s>", "<|im_end|>", "\n"], "do_sample": False,
                              "temperature": 0.0},
        "repeats": 1, "num_fewshot": num_fewshot,
        "metadata": {"version": 1.0},
        **dataset,
    }
