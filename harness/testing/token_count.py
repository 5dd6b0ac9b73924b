"""Prompt tokens as a test server counts them: with a tokenizer.json when given (exactly as an
engine with that tokenizer would), else by words. Chat prompts are rendered with the chat
template beside the tokenizer (`chat_template.jinja`, as the harness caches it) when there is
one, as an engine renders them, so test servers check chat prompts as exactly as text ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def content_text(content: Any) -> str:
    """A chat message's text: a string, or OpenAI content parts ({"type": "text", ...})."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


class PromptCounter:
    def __init__(self, tokenizer_json: str = "") -> None:
        self.tok = None
        self.template = None
        if tokenizer_json:
            from tokenizers import Tokenizer

            self.tok = Tokenizer.from_file(tokenizer_json)
            jinja = Path(tokenizer_json).with_name("chat_template.jinja")
            if jinja.is_file():
                from jinja2.sandbox import ImmutableSandboxedEnvironment

                env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
                self.template = env.from_string(jinja.read_text())

    def chat(self, messages: list[dict[str, Any]]) -> int:
        """A chat request's prompt tokens: the rendered template when there is one, else the
        messages' text alone."""
        if self.template is None or self.tok is None:
            return sum(self(content_text(m.get("content"))) for m in messages)
        text = self.template.render(
            messages=[{**m, "content": content_text(m.get("content"))} for m in messages],
            add_generation_prompt=True, bos_token="", eos_token="")
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    def __call__(self, text: str) -> int:
        if self.tok is not None:
            return len(self.tok.encode(text, add_special_tokens=False).ids)
        return max(1, len(text.split()))
