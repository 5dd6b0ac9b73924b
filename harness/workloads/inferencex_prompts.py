"""Random prompts as InferenceX's client builds them (`scenario.prompts: inferencex`, the default;
docs/upstream/inferencex.md §3.2, `utils/bench_serving/benchmark_serving.py`
`sample_random_requests`):

- with a chat template, its length for a one-letter user turn, less one, is taken off the
  target first;
- token ids are consecutive from a random offset, `(offset + i + j) % vocab_size`, where i is
  the prompt's index and vocab_size the tokenizer's base vocabulary;
- decode, then up to ten rounds of re-encode: append random ids when short, truncate when long,
  stop when the length holds; decode again;
- with a chat template the text becomes the single user turn.

The length the server will count is then measured, not assumed (exact for an engine that
tokenizes like the Hugging Face tokenizer; `scenario.prompts: filtered` builds exact prompts
for engines that do not, such as llama.cpp with SmolLM2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

_ROUNDS = 10  # upstream's re-encode rounds


@dataclass
class InferenceXPromptBuilder:
    """Same interface as `PromptBuilder` (build, messages, render, api)."""

    tokenizer: Any
    api: str  # completions | chat
    chat_template: bool
    _index: int = field(default=0, init=False)  # the prompt's index i in upstream's formula

    @property
    def vocab_size(self) -> int:
        return int(getattr(self.tokenizer, "vocab_size", None) or len(self.tokenizer))

    def template_overhead(self) -> int:
        """Upstream's chat_template_len: the template around the user turn "a", less one."""
        if not (self.chat_template or self.api == "chat"):
            return 0
        text = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": "a"}], tokenize=False, add_generation_prompt=True)
        return len(self.tokenizer.encode(text, add_special_tokens=False)) - 1

    def messages(self, text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]

    def render(self, text: str) -> str:
        if not self.chat_template:
            return text
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)

    def _text(self, rng: np.random.Generator, n: int) -> str:
        tok, v = self.tokenizer, self.vocab_size
        offset = int(rng.integers(0, v))
        ids = [(offset + self._index + j) % v for j in range(n)]
        self._index += 1
        text = tok.decode(ids)
        for _ in range(_ROUNDS):
            back = tok.encode(text, add_special_tokens=False)
            if len(back) == n:
                break
            if len(back) < n:
                back = back + rng.integers(0, v, size=n - len(back)).tolist()
            else:
                back = back[:n]
            text = tok.decode(back)
        return text

    def build(self, rng: np.random.Generator, isl: int) -> tuple[str, int]:
        """The user text and the prompt tokens the server will count for it."""
        text = self._text(rng, max(1, isl - self.template_overhead()))
        if self.api == "chat":
            ids = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], tokenize=True, add_generation_prompt=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            return text, len(ids)
        # what the server counts: the rendered prompt, with the tokenizer's own special tokens
        return text, len(self.tokenizer(self.render(text))["input_ids"])
