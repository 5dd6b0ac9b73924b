"""An OpenAI-compatible server with scripted timing: the instrument for metric-accuracy tests.

Never what a benchmark measures. Each request's timing comes from the server's defaults or
from an `x_script` object in the request body:

    {"ttft_ms": 50, "itl_ms": 5, "tokens_per_chunk": [1, 3, 2], "fail": "", "usage": true,
     "prompt_tokens": 123}

`tokens_per_chunk` cycles (multi-token chunks mimic speculative decoding). `fail` is one of
"" | "http500" | "truncate" (close mid-stream, no [DONE]) | "error_event" (an error event mid
stream). The server logs the truth of every request: its receive time and the write time of
every chunk, on `time.perf_counter()` (CLOCK_MONOTONIC on Linux, the client's clock too);
`GET /x/log` returns that log, keyed by the body's `x_id`.

`/metrics` serves Prometheus counters in vLLM's names, including speculative-decoding counters
consistent with `--accept-len` (so verification can be tested), and `--slowdown F` multiplies
every delay (a "20% slower server" for the gate).

Run: python -m harness.testing.scripted_server --port 0 --ttft-ms 50 --itl-ms 5
Prints `PORT <n>` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from harness.testing.spawn import serve_forever
from harness.testing.token_count import PromptCounter


@dataclass
class Defaults:
    ttft_ms: float = 50.0
    itl_ms: float = 5.0
    tokens_per_chunk: list[int] = field(default_factory=lambda: [1])
    slowdown: float = 1.0
    accept_len: float = 0.0  # > 1: report speculative counters realising this AL
    spec_k: int = 4
    model: str = "scripted"
    api_key: str = ""  # when set, requests must carry "Authorization: Bearer <key>"
    tokenizer: str = ""  # a tokenizer.json: count prompt tokens as a real server does
    fail_every: int = 0  # > 0: every n-th request gets HTTP 500


@dataclass
class Counters:
    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0


def _chunk_event(chat: bool, text: str, model: str) -> bytes:
    if chat:
        choice: dict[str, Any] = {"index": 0, "delta": {"content": text}, "finish_reason": None}
        obj = {"object": "chat.completion.chunk", "model": model, "choices": [choice]}
    else:
        choice = {"index": 0, "text": text, "finish_reason": None}
        obj = {"object": "text_completion", "model": model, "choices": [choice]}
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _usage_event(chat: bool, prompt: int, completion: int, model: str) -> bytes:
    finish: dict[str, Any] = {"index": 0, "finish_reason": "length"}
    finish.update({"delta": {}} if chat else {"text": ""})
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "total_tokens": prompt + completion}
    a = {"object": "chunk", "model": model, "choices": [finish]}
    b = {"object": "chunk", "model": model, "choices": [], "usage": usage}
    return b"data: " + orjson.dumps(a) + b"\n\ndata: " + orjson.dumps(b) + b"\n\n"


class ScriptedServer:
    def __init__(self, defaults: Defaults) -> None:
        self.d = defaults
        self.log: dict[str, dict[str, Any]] = {}
        self.counters = Counters()
        self._count = PromptCounter(defaults.tokenizer)

    def _script(self, body: dict[str, Any]) -> dict[str, Any]:
        s = {
            "ttft_ms": self.d.ttft_ms,
            "itl_ms": self.d.itl_ms,
            "tokens_per_chunk": self.d.tokens_per_chunk,
            "fail": "",
            "usage": True,
        }
        s.update(body.get("x_script") or {})
        return s

    def _authorized(self, request: web.Request) -> bool:
        return not self.d.api_key or request.headers.get("Authorization") == (
            f"Bearer {self.d.api_key}")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        received = time.perf_counter()
        if not self._authorized(request):
            return web.json_response({"error": {"message": "invalid API key"}}, status=401)
        body = orjson.loads(await request.read())
        chat = request.path.endswith("/chat/completions")
        script = self._script(body)
        rid = str(body.get("x_id", f"anon-{len(self.log)}"))
        # chat's max_completion_tokens first, as vLLM reads it
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens", 16))
        if "prompt_tokens" in script:
            prompt_tokens = int(script["prompt_tokens"])
        elif chat:
            prompt_tokens = self._count.chat(body["messages"])
        else:
            prompt = body.get("prompt", "")
            prompt_tokens = len(prompt) if isinstance(prompt, list) else self._count(prompt)
        truth: dict[str, Any] = {"received": received, "chunk_writes": [], "chunk_tokens": []}
        self.log[rid] = truth
        self.counters.requests += 1
        self.counters.prompt_tokens += prompt_tokens
        if script["fail"] == "http500" or (
                self.d.fail_every and self.counters.requests % self.d.fail_every == 0):
            return web.json_response({"error": {"message": "scripted failure"}}, status=500)

        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        slow = self.d.slowdown
        if chat:  # a role-only first chunk, as real servers send: must not stamp TTFT
            role = {"object": "chat.completion.chunk", "model": self.d.model,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}
            await resp.write(b"data: " + orjson.dumps(role) + b"\n\n")
        target = received + script["ttft_ms"] * slow / 1000.0
        sizes = itertools.cycle([max(1, int(k)) for k in script["tokens_per_chunk"]])
        sent = 0
        while sent < max_tokens:
            delay = target - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            k = min(next(sizes), max_tokens - sent)
            await resp.write(_chunk_event(chat, " tok" * k, self.d.model))
            truth["chunk_writes"].append(time.perf_counter())
            truth["chunk_tokens"].append(k)
            sent += k
            self._count_spec(k)
            if script["fail"] == "truncate" and sent >= max_tokens // 2:
                truth["truncated"] = True
                request.transport.close()  # type: ignore[union-attr]
                return resp
            if script["fail"] == "error_event" and sent >= max_tokens // 2:
                err = {"error": {"message": "scripted mid-stream error", "code": 500}}
                await resp.write(b"data: " + orjson.dumps(err) + b"\n\ndata: [DONE]\n\n")
                return resp
            target += script["itl_ms"] * slow / 1000.0
        self.counters.generation_tokens += sent
        if script["usage"]:
            await resp.write(_usage_event(chat, prompt_tokens, sent, self.d.model))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    def _count_spec(self, tokens: int) -> None:
        """Speculative counters whose AL (1 + accepted/drafts) tends to `accept_len`."""
        al = self.d.accept_len
        if al <= 1:
            return
        c = self.counters
        # Emit drafts so that accepted / drafts tracks (al - 1) over time.
        c.drafts += 1
        c.draft_tokens += self.d.spec_k
        target = round((al - 1) * c.drafts)
        c.accepted = max(c.accepted, min(target, c.draft_tokens))
        del tokens

    async def metrics(self, _: web.Request) -> web.Response:
        c = self.counters
        lines = [
            f"vllm:prompt_tokens_total {c.prompt_tokens}",
            f"vllm:generation_tokens_total {c.generation_tokens}",
            f"vllm:request_success_total {c.requests}",
            f"vllm:spec_decode_num_drafts_total {c.drafts}",
            f"vllm:spec_decode_num_draft_tokens_total {c.draft_tokens}",
            f"vllm:spec_decode_num_accepted_tokens_total {c.accepted}",
        ]
        return web.Response(text="\n".join(lines) + "\n")

    async def get_log(self, _: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(self.log), content_type="application/json")

    async def health(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def models(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"error": {"message": "invalid API key"}}, status=401)
        return web.json_response({"object": "list", "data": [{"id": self.d.model}]})

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.completions)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/x/log", self.get_log)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        return app


async def _serve(port: int, defaults: Defaults) -> None:
    await serve_forever(ScriptedServer(defaults).app(), port)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--itl-ms", type=float, default=5.0)
    p.add_argument("--tokens-per-chunk", type=int, nargs="+", default=[1])
    p.add_argument("--slowdown", type=float, default=1.0)
    p.add_argument("--accept-len", type=float, default=0.0)
    p.add_argument("--spec-k", type=int, default=4)
    p.add_argument("--model", default="scripted")
    p.add_argument("--api-key-env", default="", help="require the key in this env variable")
    p.add_argument("--tokenizer", default="", help="tokenizer.json to count prompt tokens")
    p.add_argument("--fail-every", type=int, default=0, help="HTTP 500 on every n-th request")
    a = p.parse_args(argv)
    import os

    d = Defaults(a.ttft_ms, a.itl_ms, a.tokens_per_chunk, a.slowdown, a.accept_len, a.spec_k,
                 a.model, os.environ.get(a.api_key_env, "") if a.api_key_env else "",
                 a.tokenizer, a.fail_every)
    # The stock loop, not uvloop: uvloop coalesces transport writes until the end of a loop
    # iteration, which would hold back a stream's last chunks behind the final writes.
    asyncio.run(_serve(a.port, d))


if __name__ == "__main__":
    main()
