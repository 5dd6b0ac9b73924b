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

DeepSeek-V4 ships no jinja chat template, so upstream's `--dsv4` (which requires
`--use-chat-template`) renders the user turn with DeepSeek's own encoder instead
(SemiAnalysisAI/InferenceX:infx/bench_serving/benchmark_serving.py@50384f4a92c09e025e21e7c6cec31e14189f48de
`_apply_chat_template`: `encode_messages([user turn], thinking_mode="thinking")`,
infx/bench_serving/encoding_dsv4.py@ca4b9c321a12888f71d8376203154ff92a6afa74). For one user
message that encoder writes BOS, the user token, the text, the assistant token and `<think>`
(`dsv4_user_turn`); the template length taken off is measured on that text as upstream does.
Chosen by the model recipe (`model.chat_encoder: dsv4`).

The length the server will count is then measured, not assumed (exact for an engine that
tokenizes like the Hugging Face tokenizer; `scenario.prompts: filtered` builds exact prompts
for engines that do not, such as llama.cpp with SmolLM2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

_ROUNDS = 10  # upstream's re-encode rounds

# DeepSeek-V4's special tokens, as its encoder spells them (encoding_dsv4.py@ca4b9c3).
DSV4_BOS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
DSV4_USER = "<\uff5cUser\uff5c>"
DSV4_ASSISTANT = "<\uff5cAssistant\uff5c>"
DSV4_THINK = "<think>"
CHAT_ENCODERS = ("template", "dsv4")  # model.chat_encoder


def dsv4_user_turn(text: str) -> str:
    """encode_messages([{"role": "user", "content": text}], thinking_mode="thinking"): BOS (no
    context), the user token and the text (its one text block), then, for the last user turn
    in thinking mode with drop_thinking, the assistant token and `<think>`."""
    return f"{DSV4_BOS}{DSV4_USER}{text}{DSV4_ASSISTANT}{DSV4_THINK}"


@dataclass
class InferenceXPromptBuilder:
    """Same interface as `PromptBuilder` (build, messages, render, api)."""

    tokenizer: Any
    api: str  # completions | chat
    chat_template: bool
    encoder: str = "template"  # template: the tokenizer's chat template; dsv4: DeepSeek-V4's
    _index: int = field(default=0, init=False)  # the prompt's index i in upstream's formula

    @property
    def vocab_size(self) -> int:
        return int(getattr(self.tokenizer, "vocab_size", None) or len(self.tokenizer))

    def template_overhead(self) -> int:
        """Upstream's chat_template_len: the template around the user turn "a", less one."""
        if not (self.chat_template or self.api == "chat"):
            return 0
        text = self._user_turn("a")
        return len(self.tokenizer.encode(text, add_special_tokens=False)) - 1

    def _user_turn(self, text: str) -> str:
        if self.encoder == "dsv4":
            return dsv4_user_turn(text)
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)

    def messages(self, text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]

    def render(self, text: str) -> str:
        return self._user_turn(text) if self.chat_template else text

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
        if self.api == "chat" and self.encoder == "dsv4":
            # the server renders the turn with the same encoder (vLLM/SGLang deepseek_v4 modes)
            return text, len(self.tokenizer.encode(dsv4_user_turn(text), add_special_tokens=False))
        if self.api == "chat":
            ids = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], tokenize=True, add_generation_prompt=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            return text, len(ids)
        # what the server counts: the rendered prompt, with the tokenizer's own special tokens
        return text, len(self.tokenizer(self.render(text))["input_ids"])
