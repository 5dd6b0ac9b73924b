"""Request bodies of an agentic replay: a trace request, where it sits (ReplayContext) ->
the bytes sent. Prompt text comes from block hash ids (harness.workloads.prompts), exact in
token count; the chat template's overhead is counted in the expected prompt tokens."""

from __future__ import annotations

from typing import Any

import orjson

from harness.records import RequestSpec
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay_context import ReplayContext
from harness.workloads.traces.model import TraceRequest


class AgenticBodies:
    def __init__(self, prompts: BlockPrompts, body_base: dict[str, Any], prompt_overhead: int,
                 api: str = "completions") -> None:
        self.prompts, self.body_base, self.overhead, self.api = (prompts, body_base,
                                                                 prompt_overhead, api)
        self._n = 0

    def spec(self, r: TraceRequest, ctx: ReplayContext, max_tokens: int | None = None
             ) -> RequestSpec:
        tr = ctx.trace
        text = self.prompts.prompt(ctx.salt, r.hash_ids, tr.block_size, r.in_tokens,
                                   pad_key=(ctx.session, ctx.path, ctx.turn))
        body = dict(self.body_base)
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
        out = r.out_tokens if max_tokens is None else max_tokens
        body["max_tokens"] = out
        self._n += 1
        n_ids = -(-r.in_tokens // tr.block_size)
        tags = {"lane": ctx.lane, "session": ctx.session, "trace": tr.id, "agent": ctx.path,
                "turn": ctx.turn, "recorded_t": r.t, "think": r.think, "in": r.in_tokens,
                "out": r.out_tokens, "block_size": tr.block_size,
                "salt": repr(ctx.salt), "hash_ids": list(r.hash_ids[:n_ids]), **ctx.extra}
        return RequestSpec(
            request_id=f"{ctx.session}/{ctx.path or 'main'}/{ctx.turn}/{self._n}",
            path="/v1/chat/completions" if self.api == "chat" else "/v1/completions",
            body=orjson.dumps(body), expected_prompt_tokens=r.in_tokens + self.overhead,
            max_tokens=out, phase=ctx.phase, tags=tags)
