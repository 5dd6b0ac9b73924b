"""Prompt tokens as a test server counts them: with a tokenizer.json when given (exactly as an
engine with that tokenizer would), else by words."""

from __future__ import annotations

from typing import Any


def content_text(content: Any) -> str:
    """A chat message's text: a string, or OpenAI content parts ({"type": "text", ...})."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


class PromptCounter:
    def __init__(self, tokenizer_json: str = "") -> None:
        self.tok = None
        if tokenizer_json:
            from tokenizers import Tokenizer

            self.tok = Tokenizer.from_file(tokenizer_json)

    def __call__(self, text: str) -> int:
        if self.tok is not None:
            return len(self.tok.encode(text, add_special_tokens=False).ids)
        return max(1, len(text.split()))
