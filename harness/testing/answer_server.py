"""An OpenAI-compatible chat server whose answers are known: the instrument for testing that
the correctness checks can fail (harness.evals).

- Evals: with --answers (a GSM8K JSONL: question, answer) it answers each question with its
  reference working and `#### n`, as a model that is always right; --wrong answers n + 1,
  a model that is always wrong (it must fail the eval floor).
- Lossless: otherwise each reply is a token sequence drawn from a fixed per-position
  distribution (a function of the prompt and, above temperature 0, of the request's seed;
  at temperature 0 the most likely token, as greedy decoding). --speculative emulates a
  speculator that drafts k tokens and verifies them exactly (output unchanged);
  --perturb-verified P replaces a verified token with the next one in the vocabulary with
  probability P (the broken verification the lossless check must catch); --sampler-bias B
  moves probability B onto the first token of the vocabulary (a sampler bias, lossy above 0);
  --batch-noise P changes each token with probability P, unseeded, while another request is in
  flight (batch-dependent numerics: the engine does not repeat itself with company, and does
  alone).

Replies carry logprobs.content (token by token), usage, and /metrics the llama.cpp counters
of drafts and accepted tokens.

Run: python -m harness.testing.answer_server --port 0 [--answers FILE [--wrong]]
Prints `PORT <n>` once it listens (harness.testing.spawn.spawn_server's convention).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from harness.testing.spawn import serve_forever

VOCAB = [f"w{i}" for i in range(12)]


@dataclass
class Options:
    answers: str = ""
    wrong: bool = False
    speculative: bool = False
    k: int = 3
    perturb_verified: float = 0.0
    sampler_bias: float = 0.0
    model: str = "emulated"
    batch_noise: float = 0.0


def _h(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "little")


def position_probs(prompt: str, pos: int, bias: float) -> list[float]:
    """The model's distribution at one position: peaked, prompt- and position-dependent."""
    rng = random.Random(_h(prompt, pos))
    w = [rng.random() ** 3 for _ in VOCAB]
    w[rng.randrange(len(VOCAB))] += 1.5
    total = sum(w)
    p = [x / total for x in w]
    if bias:
        p = [(1 - bias) * x for x in p]
        p[0] += bias
    return p


class AnswerServer:
    def __init__(self, o: Options) -> None:
        self.o = o
        self.key: dict[str, str] = {}
        if o.answers:
            for line in Path(o.answers).read_text().splitlines():
                d = json.loads(line)
                self.key[d["question"].strip()] = d["answer"]
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted = 0
        self.in_flight = 0

    def answer(self, text: str) -> str:
        """The reference answer of the last question in the prompt (few-shot examples come
        before it), or one off when --wrong."""
        questions = re.findall(r"Question: (.*?)\nEnd your response", text, flags=re.S)
        q = questions[-1].strip() if questions else text.strip()
        ref = self.key.get(q)
        if ref is None:
            return "I do not know.\n#### 0"
        work, _, n = ref.rpartition("#### ")
        if self.o.wrong:
            n = str(int(n.replace(",", "")) + 1)
        return f"{work}#### {n}"

    def generate(self, prompt: str, max_tokens: int, temperature: float,
                 seed: int, batched: bool = False) -> list[str]:
        o = self.o
        # --batch-noise: with company in flight, numerics that depend on the batch (as
        # llama.cpp's do): a token changes at random, unseeded, so two passes differ
        noise = random.Random() if batched and o.batch_noise else None
        rng = random.Random(_h(prompt, seed, "sample"))
        spoil = random.Random(_h(prompt, seed, "spoil"))
        out: list[str] = []
        while len(out) < max_tokens:
            pos = len(out)
            p = position_probs(prompt, pos, o.sampler_bias if o.speculative else 0.0)
            if temperature == 0:
                tok = max(range(len(VOCAB)), key=lambda i: p[i])
            else:
                q = [x ** (1 / temperature) for x in p]
                tok = rng.choices(range(len(VOCAB)), weights=q)[0]
            if o.speculative and pos % (o.k + 1) != 0:  # a verified draft token
                self.accepted += 1
                if spoil.random() < o.perturb_verified:
                    tok = (tok + 1) % len(VOCAB)
            elif o.speculative:
                self.drafts += 1
                self.draft_tokens += o.k
            if noise is not None and noise.random() < o.batch_noise:
                tok = (tok + 2) % len(VOCAB)
            out.append(VOCAB[tok])
        return out

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        top = int(body.get("top_logprobs") or 0)
        self.in_flight += 1
        try:
            if self.o.batch_noise:  # a batch's lifetime: requests sent together overlap
                await asyncio.sleep(0.05)
            batched = self.in_flight > 1
        finally:
            self.in_flight -= 1
        if self.key:
            content = self.answer(text)
            tokens = content.split(" ")
        else:
            tokens = self.generate(text, max_tokens, float(body.get("temperature") or 0.0),
                                   int(body.get("seed") or 0), batched)
            content = " ".join(tokens)
        reply: dict[str, Any] = {
            "id": "emulated", "object": "chat.completion", "model": self.o.model,
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": content},
                         "logprobs": {"content": self.logprobs(text, tokens, top)}}],
            "usage": {"prompt_tokens": len(text.split()), "completion_tokens": len(tokens)}}
        return web.json_response(reply)

    def logprobs(self, prompt: str, tokens: list[str], top: int) -> list[dict[str, Any]]:
        """Per token: its log-probability under the position's distribution and the `top`
        likeliest (answers, which are not drawn from it, report 0)."""
        if self.key:
            return [{"token": t, "logprob": 0.0} for t in tokens]
        bias = self.o.sampler_bias if self.o.speculative else 0.0
        out = []
        for pos, t in enumerate(tokens):
            p = position_probs(prompt, pos, bias)
            best = sorted(range(len(VOCAB)), key=lambda i: -p[i])[:top]
            out.append({"token": t, "logprob": math.log(p[VOCAB.index(t)]),
                        "top_logprobs": [{"token": VOCAB[i], "logprob": math.log(p[i])}
                                         for i in best]})
        return out

    async def models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.o.model}]})

    async def health(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def metrics(self, _: web.Request) -> web.Response:
        text = (f"llamacpp:spec_decode_num_drafts_total {self.drafts}\n"
                f"llamacpp:spec_decode_num_draft_tokens_total {self.draft_tokens}\n"
                f"llamacpp:spec_decode_num_accepted_tokens_total {self.accepted}\n")
        return web.Response(text=text)

    def app(self) -> web.Application:
        a = web.Application()
        a.router.add_post("/v1/chat/completions", self.chat)
        a.router.add_get("/v1/models", self.models)
        a.router.add_get("/health", self.health)
        a.router.add_get("/metrics", self.metrics)
        return a


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--answers", default="", help="GSM8K JSONL whose answers to give")
    p.add_argument("--wrong", action="store_true", help="answer every question off by one")
    p.add_argument("--speculative", action="store_true", help="emulate a speculator")
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--perturb-verified", type=float, default=0.0)
    p.add_argument("--sampler-bias", type=float, default=0.0)
    p.add_argument("--model", default="emulated")
    p.add_argument("--batch-noise", type=float, default=0.0)
    a = p.parse_args(argv)
    o = Options(a.answers, a.wrong, a.speculative, a.k, a.perturb_verified, a.sampler_bias,
                a.model, a.batch_noise)
    asyncio.run(serve_forever(AnswerServer(o).app(), a.port))


if __name__ == "__main__":
    main()
