"""The engine emulator, retunable between points: `POST /debug/acceptance` sets the injected
acceptance length, the draft length, the AL bias and (optionally) the decode step period of a
running emulator, so one emulator per
(engine, dp) serves many catalog keys in turn (`harness catalog verify-e2e`,
harness/testing/catalog_e2e.py) instead of one process start per key.

A retune is what a relaunch with other `--al`/`--k` would give the harness: the decode state a
fresh server would not have is dropped (SGLang's last logged gauge and its interval
accumulators, TensorRT-LLM's last iteration AL, every rank's prefix cache), while counters keep
counting (a relaunched engine starts them at zero; the harness reads deltas over each point's
window, so either reads the same). It refuses while requests run: a point's AL never changes
inside its window.

It also counts a chat request's prompt as a server does, with the chat template: the content
tokens plus what the tokenizer's template adds for the messages' roles (the engine emulator
counts the contents alone, so every chat prompt read short of what the harness built). Without
a --tokenizer it counts as the engine emulator does.

Run: python -m harness.testing.emulator_tunable --port 0 --engine sglang --dp 4 ... (the
engine emulator's arguments, harness/testing/engine_emulator.py).
"""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from harness.speculation.acceptance import synthetic_rates
from harness.testing import engine_emulator
from harness.testing.emulator_cache import PrefixCache
from harness.testing.token_count import content_text
from harness.workloads.chat_bodies import TemplateOverhead

# the prompt tokens of the chat request being admitted (one asyncio task per request)
_CHAT_TOKENS: contextvars.ContextVar[int | None] = contextvars.ContextVar("chat", default=None)


class TunableEmulator(engine_emulator.Emulator):
    def __init__(self, o: Any) -> None:
        super().__init__(o)
        self.template: TemplateOverhead | None = None
        if o.tokenizer:
            from transformers import AutoTokenizer

            self.count_text = self.count
            self.template = TemplateOverhead(AutoTokenizer.from_pretrained(
                str(Path(o.tokenizer).parent)))
            joined = self.count
            self.count = lambda text: (  # type: ignore[method-assign]
                n if (n := _CHAT_TOKENS.get()) is not None else joined(text))

    async def completions(self, request: web.Request) -> web.StreamResponse:
        """Each message's content counted on its own (as the template renders it, not joined
        with spaces), plus the template's tokens for the roles."""
        if self.template is not None and request.path.endswith("/chat/completions"):
            body = orjson.loads(await request.read())  # aiohttp keeps it for the handler
            msgs = body.get("messages", [])
            roles = tuple(str(m.get("role", "")) for m in msgs)
            _CHAT_TOKENS.set(sum(self.count_text(content_text(m.get("content"))) for m in msgs)
                             + self.template(roles))
        return await super().completions(request)

    def retune(self, al: float, k: int, al_bias: float, step_ms: float | None = None) -> None:
        synthetic_rates(al, k)  # ValueError for an AL outside [1, k+1] (as --al would fail)
        # the realised AL, biased, is clamped into the range as engine_emulator.py clamps it
        rates = synthetic_rates(min(max(al + al_bias, 1.0), k + 1.0), k)
        if step_ms is not None and not step_ms > 0:
            raise ValueError(f"step_ms must be positive, got {step_ms}")
        self.o.al, self.o.k, self.o.al_bias = al, k, al_bias
        self.o.step_ms = self.o.step_ms if step_ms is None else step_ms
        self.rates = rates
        for r in self.ranks:
            r.per_pos = (r.per_pos + [0] * k)[:k]
            r.gauge, r.gauge_rate = None, 0.0
            r.interval_tokens = r.interval_ct = 0
            r.cache = PrefixCache(self.o.cache_blocks, self.o.host_blocks)
        self.c.pop("iter_al", None)

    async def set_acceptance(self, request: web.Request) -> web.Response:
        if any(r.active for r in self.ranks):
            return web.Response(status=409, text="requests are running\n")
        body: dict[str, Any] = orjson.loads(await request.read() or b"{}")
        try:
            step = body.get("step_ms")
            self.retune(float(body["al"]), int(body["k"]), float(body.get("al_bias", 0.0)),
                        None if step is None else float(step))
        except (KeyError, TypeError, ValueError) as e:
            return web.Response(status=400, text=f"{e}\n")
        return web.json_response({"al": self.o.al, "k": self.o.k, "al_bias": self.o.al_bias})

    def app(self) -> web.Application:
        app = super().app()
        app.router.add_post("/debug/acceptance", self.set_acceptance)
        return app


def main(argv: list[str] | None = None) -> None:
    # engine_emulator.main builds its Options and serves `Emulator(o)`, looked up in its module
    # when called: pointing that name at this subclass reuses its whole argument parser.
    engine_emulator.Emulator = TunableEmulator  # type: ignore[misc]
    engine_emulator.main(argv)


if __name__ == "__main__":
    main()
