"""An engine emulator: speculative decoding with injected acceptance, and each engine's metrics.

Never what a benchmark measures: it is the instrument for testing that the harness reads the
realised acceptance length (AL) from each engine's own metrics correctly. It serves, per
`--engine`, what that engine's source writes (names, HELP/TYPE lines, labels, dp ranks,
gauge interval semantics; docs/engine-metrics.md cites the files):

    sglang  /metrics (prometheus_client multiprocess: HELP "Multiprocess metric"); per-rank
            scheduler gauges with model_name/engine_type/tp_rank/pp_rank(/dp_rank) labels,
            `sglang:spec_accept_length` = mean of (accepted + 1) over the last
            --decode-log-interval decode steps of that rank; tokenizer-side counters updated
            when a request finishes; `--sglang-verify-counter` adds the newer
            `sglang:spec_verify_calls_total` (and the is_streaming label).
    vllm    /metrics with `engine` = dp rank, spec-decode counters per step, `_created` series.
    trtllm  /prometheus/metrics (trtllm_*, labels engine_type/model_name "undefined", gauges
            per pid), per-position counters at request finish; /metrics = JSON iteration stats
            (drained on read, as trtllm-serve's get_stats queue).
    atom    /metrics aggregated over dp ranks, no labels, CounterMetricFamily `_total`
            samples; /debug/mtp_stats JSON.

Every engine also serves its prefix-cache hits by source and its KV usage (the series
harness/engines/engine_counters.py declares), from a per-rank prefix cache over blocks of the
prompt text with an optional host tier (harness.testing.emulator_cache). The renderers are in
harness.testing.emulator_metrics, the state in harness.testing.emulator_state.

Decoding: requests go round-robin to --dp ranks unless a router pinned them to one (the body's
`data_parallel_rank`, as sgl-router --dp-aware writes it, or the `X-data-parallel-rank` header
vllm-router sends; harness.testing.router_emulator); each rank runs decode steps every --step-ms;
every step each running request emits 1 + accepted tokens in one SSE chunk (cut at
max_tokens). The accepted count follows `synthetic_rates(al + al_bias, k)`: drawn per request
and step (vLLM, TensorRT-LLM, ATOM), or once per rank step for the whole batch (SGLang's
match-expected). --al-bias makes the engine realise a wrong AL. Seeded: --seed.

Run: python -m harness.testing.engine_emulator --port 0 --engine sglang --dp 4 --al 2.5 --k 3
Prints `PORT <n>` once it listens (harness.testing.spawn.spawn_server's convention).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import time
from collections import deque
from typing import Any

import orjson
from aiohttp import web

from harness.speculation.acceptance import synthetic_rates
from harness.testing import emulator_control as control
from harness.testing import emulator_metrics as metrics
from harness.testing.emulator_cache import PrefixCache
from harness.testing.emulator_state import ENGINES, Options, Rank, Req
from harness.testing.spawn import serve_forever
from harness.testing.token_count import PromptCounter, content_text


def draw_accepted(rng: random.Random, rates: list[float]) -> int:
    """Accepted draft tokens of one draft: position i is accepted with its conditional rate
    p_i / p_(i-1), stopping at the first rejection (vLLM's synthetic sampler; TRT-LLM's
    integer-plus-fraction force and SGLang's match-expected give the same distribution)."""
    count, prev = 0, 1.0
    for p in rates:
        if p <= 0.0 or rng.random() >= p / prev:
            break
        count, prev = count + 1, p
    return count


class Emulator:
    def __init__(self, o: Options) -> None:
        if o.engine not in ENGINES:
            raise ValueError(f"--engine must be one of {ENGINES}")
        self.o = o
        self.rates = synthetic_rates(min(max(o.al + o.al_bias, 1.0), o.k + 1.0), o.k)
        self.ranks = [Rank(i, random.Random(o.seed * 1000 + i), per_pos=[0] * o.k,
                           cache=PrefixCache(o.cache_blocks, o.host_blocks))
                      for i in range(o.dp)]
        self.rr = itertools.cycle(self.ranks)
        self.c: dict[str, float] = {}  # server-wide (tokenizer-side / aggregated) counters
        self.iter_stats: deque[dict[str, Any]] = deque(maxlen=1000)
        self.iterations = 0
        self.created = time.time()
        self.tasks: list[asyncio.Task] = []
        self.count = PromptCounter(o.tokenizer)

    def inc(self, key: str, v: float = 1.0, rank: Rank | None = None) -> None:
        d = rank.c if rank is not None else self.c
        d[key] = d.get(key, 0.0) + v

    # ---- decoding -------------------------------------------------------------------------

    async def rank_loop(self, rank: Rank) -> None:
        while True:
            rank.active = [r for r in rank.active if not r.cancelled]
            if not rank.active:
                rank.wake.clear()
                await rank.wake.wait()
                continue
            self.step(rank)
            await asyncio.sleep(self.o.step_ms / 1000.0)

    def step(self, rank: Rank) -> None:
        """One decode (verify) step of one rank: every running request emits 1 + accepted."""
        shared = draw_accepted(rank.rng, self.rates) if self.o.engine == "sglang" else None
        batch, accepted_sum = list(rank.active), 0
        for req in batch:
            acc = shared if shared is not None else draw_accepted(rank.rng, self.rates)
            emit = min(1 + acc, req.remaining)
            req.sent += emit
            rank.held_tokens += emit
            req.steps += 1
            req.queue.put_nowait(emit)
            accepted_sum += acc
            self.count_step(rank, req, acc, emit)
            if req.remaining <= 0:
                rank.active.remove(req)
                self.finish(rank, req)
        rank.forward_ct += 1
        if self.o.engine == "sglang":
            self.sglang_log(rank)
        elif self.o.engine == "trtllm":
            self.trtllm_iteration(rank, len(batch), accepted_sum)

    def count_step(self, rank: Rank, req: Req, acc: int, emit: int) -> None:
        """Per request and step, as each engine counts it."""
        e, k = self.o.engine, self.o.k
        if e == "vllm":  # scheduler stats, before stop-string/max_tokens truncation
            self.inc("drafts", 1, rank)
            self.inc("draft_tokens", k, rank)
            self.inc("accepted", acc, rank)
            self.inc("generation", emit, rank)
            for i in range(acc):
                rank.per_pos[i] += 1
        elif e == "sglang":  # accept_length recomputed after the finished request is cut
            rank.interval_tokens += emit
            rank.interval_ct += 1
        elif e == "trtllm":
            req.drafted_pos = req.drafted_pos or [0] * k
            req.accepted_pos = req.accepted_pos or [0] * k
            for i in range(k):
                req.drafted_pos[i] += 1
                req.accepted_pos[i] += i < acc
        else:  # atom: engine-side spec_stats, summed over dp ranks
            self.inc("mtp_draft_tokens", k)
            self.inc("mtp_accepted_tokens", acc)
            self.inc(f"mtp_steps:{acc}")

    def sglang_log(self, rank: Rank) -> None:
        """SGLang logs decode stats every decode_log_interval forward steps of a rank: the
        gauge is the mean over that interval only, then the accumulators reset."""
        if rank.forward_ct % self.o.decode_log_interval or not rank.interval_ct:
            return
        rank.gauge = rank.interval_tokens / rank.interval_ct
        rank.gauge_rate = rank.interval_tokens / (rank.interval_ct * (self.o.k + 1))
        rank.interval_tokens = rank.interval_ct = 0

    def trtllm_iteration(self, rank: Rank, n: int, accepted: int) -> None:
        self.iterations += 1
        spec = {"numDraftTokens": n * self.o.k, "numAcceptedTokens": accepted,
                "numRequestsWithDraftTokens": n, "acceptanceLength": (accepted + n) / n,
                "iterLatencyMS": self.o.step_ms / 2, "draftOverhead": 0.5}
        self.iter_stats.append({"iter": self.iterations, "iterLatencyMS": self.o.step_ms,
                                "numActiveRequests": len(rank.active),
                                "specDecodingStats": spec})
        self.inc("iter_draft_tokens", n * self.o.k)
        self.inc("iter_accepted_tokens", accepted)
        self.c["iter_al"] = (accepted + n) / n

    def finish(self, rank: Rank, req: Req) -> None:
        """Counters an engine updates when a request ends (tokenizer-side / per request)."""
        req.queue.put_nowait(None)
        rank.held_tokens -= req.prompt_tokens + req.sent
        e = self.o.engine
        self.inc("requests")
        if e == "vllm":  # its counters moved per step
            return
        self.inc("prompt", req.prompt_tokens)
        self.inc("generation", req.sent)
        self.inc("cached", req.cached_device + req.cached_host)  # TRT-LLM, ATOM: one counter
        if e == "sglang":
            self.inc("verify_calls", req.steps)
            self.inc("cached:device", req.cached_device)
            self.inc("cached:host", req.cached_host)
        elif e == "trtllm":
            for i, (d, a) in enumerate(zip(req.drafted_pos, req.accepted_pos, strict=True)):
                self.inc(f"drafted_pos:{i}", d)
                self.inc(f"accepted_pos:{i}", a)

    # ---- HTTP -----------------------------------------------------------------------------

    async def admit(self, req: Req) -> Rank:
        """Prefill on a rank (the routed one, else round robin): after TTFT one token, then
        decode steps."""
        rank = self.ranks[req.routed_rank] if req.routed_rank is not None else next(self.rr)
        hit = rank.cache.lookup(req.text, req.prompt_tokens)
        req.cached_device, req.cached_host = hit.device, hit.host
        rank.held_tokens += req.prompt_tokens
        if self.o.engine == "vllm":  # the scheduler counts at admission
            self.inc("prompt", req.prompt_tokens, rank)
            self.inc("prefix_queries", req.prompt_tokens, rank)
            self.inc("prefix_hits", hit.device, rank)
            self.inc("source:local_cache_hit", hit.device, rank)
            self.inc("source:external_kv_transfer", hit.host, rank)
            self.inc("source:local_compute", req.prompt_tokens - hit.cached, rank)
        await asyncio.sleep(self.o.ttft_ms / 1000.0)
        req.sent = 1
        req.queue.put_nowait(1)
        if self.o.engine == "vllm":
            self.inc("generation", 1, rank)
        if req.remaining > 0:
            rank.active.append(req)
            rank.wake.set()
        else:
            self.finish(rank, req)
        return rank

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        chat = request.path.endswith("/chat/completions")
        if chat:
            text = " ".join(content_text(m.get("content")) for m in body.get("messages", []))
        else:
            p = body.get("prompt", "")
            text = " ".join(map(str, p)) if isinstance(p, list) else str(p)
        routed = routed_rank(body, request.headers.get("X-data-parallel-rank"))
        if routed is not None and not 0 <= routed < self.o.dp:
            return web.json_response({"error": f"data_parallel_rank {routed} out of range "
                                      f"[0, {self.o.dp})"}, status=400)
        req = Req(prompt_tokens=self.count(text), text=text,
                  max_tokens=max(1, int(body.get("max_completion_tokens")
                                        or body.get("max_tokens") or 16)),
                  routed_rank=routed)
        usage_wanted = bool((body.get("stream_options") or {}).get("include_usage"))
        if not body.get("stream"):
            await self.admit(req)
            while await req.queue.get() is not None:
                pass
            return web.json_response(self.whole(chat, req))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            await self.stream(resp, chat, req, usage_wanted)
        except (ConnectionResetError, asyncio.CancelledError):
            req.cancelled = True
            raise
        return resp

    async def stream(self, resp: web.StreamResponse, chat: bool, req: Req, usage: bool) -> None:
        model = self.o.model
        if chat:
            await resp.write(_event({"object": "chat.completion.chunk", "model": model,
                                     "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                        "content": ""}}]}))
        task = asyncio.ensure_future(self.admit(req))
        while (n := await req.queue.get()) is not None:
            await resp.write(_event(_chunk(chat, model, " tok" * n)))
        await task
        fin: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        fin.update({"delta": {}} if chat else {"text": ""})
        await resp.write(_event({"object": "chunk", "model": model, "choices": [fin]}))
        if usage:
            await resp.write(_event({"object": "chunk", "model": model, "choices": [],
                                     "usage": _usage(req)}))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()

    def whole(self, chat: bool, req: Req) -> dict[str, Any]:
        text = " tok" * req.sent
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        choice.update({"message": {"role": "assistant", "content": text}} if chat
                      else {"text": text})
        return {"object": "chat.completion" if chat else "text_completion",
                "model": self.o.model, "choices": [choice], "usage": _usage(req)}

    async def health(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.o.model,
                                                              "object": "model"}]})

    async def prometheus(self, _: web.Request) -> web.Response:
        render = {"vllm": metrics.render_vllm, "sglang": metrics.render_sglang,
                  "trtllm": metrics.render_trtllm, "atom": metrics.render_atom}[self.o.engine]
        return web.Response(text="\n".join(render(self)) + "\n",
                            content_type="text/plain", charset="utf-8")

    async def trtllm_stats(self, _: web.Request) -> web.Response:
        """trtllm-serve's /metrics: the iteration stats queued since the last read."""
        out = list(self.iter_stats)
        self.iter_stats.clear()
        return web.Response(body=orjson.dumps(out), content_type="application/json")

    async def atom_mtp_stats(self, _: web.Request) -> web.Response:
        return web.json_response(metrics.atom_mtp(self))

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.completions)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        if self.o.engine == "trtllm":
            app.router.add_get("/prometheus/metrics", self.prometheus)
            app.router.add_get("/metrics", self.trtllm_stats)
        else:
            app.router.add_get("/metrics", self.prometheus)
        if self.o.engine == "atom":
            app.router.add_get("/debug/mtp_stats", self.atom_mtp_stats)
        control.add_routes(app, self)  # profiler and cache reset (emulator_control.py)

        async def start_ranks(_: web.Application) -> None:
            self.tasks = [asyncio.ensure_future(self.rank_loop(r)) for r in self.ranks]

        app.on_startup.append(start_ranks)
        return app


def routed_rank(body: dict[str, Any], header: str | None) -> int | None:
    """The dp rank a router pinned the request to: SGLang's body field `data_parallel_rank`
    (sgl-project/sglang:python/sglang/srt/managers/io_struct.py@f11d231c), vLLM's
    `X-data-parallel-rank` header (vllm/entrypoints/openai/serving_engine.py@7ded96b3)."""
    raw = body.get("data_parallel_rank", header)
    try:
        return None if raw is None else int(raw)
    except (TypeError, ValueError):
        return None


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _chunk(chat: bool, model: str, text: str) -> dict[str, Any]:
    if chat:
        return {"object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return {"object": "text_completion", "model": model,
            "choices": [{"index": 0, "text": text, "finish_reason": None}]}


def _usage(req: Req) -> dict[str, int]:
    return {"prompt_tokens": req.prompt_tokens, "completion_tokens": req.sent,
            "total_tokens": req.prompt_tokens + req.sent}


async def _serve(port: int, o: Options) -> None:
    await serve_forever(Emulator(o).app(), port)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--engine", choices=ENGINES, default="vllm")
    p.add_argument("--dp", type=int, default=1, help="data-parallel ranks")
    p.add_argument("--al", type=float, default=2.5, help="injected acceptance length")
    p.add_argument("--k", type=int, default=3, help="draft length")
    p.add_argument("--al-bias", type=float, default=0.0,
                   help="added to the AL the engine really realises (a broken injection)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-ms", type=float, default=1.0, help="decode step period per rank")
    p.add_argument("--ttft-ms", type=float, default=2.0)
    p.add_argument("--model", default="emulated")
    p.add_argument("--decode-log-interval", type=int, default=40, help="SGLang's default 40")
    p.add_argument("--sglang-verify-counter", action="store_true",
                   help="SGLang: also export the newer sglang:spec_verify_calls_total")
    p.add_argument("--tokenizer", default="", help="tokenizer.json to count prompt tokens")
    p.add_argument("--kv-pool-tokens", type=int, default=200_000, help="KV pool per rank")
    p.add_argument("--cache-blocks", type=int, default=4096,
                   help="device prefix-cache blocks per rank (256 characters each)")
    p.add_argument("--host-blocks", type=int, default=0,
                   help="host-tier blocks per rank, catching device evictions (0: none)")
    a = p.parse_args(argv)
    o = Options(a.engine, a.dp, a.al, a.k, a.al_bias, a.seed, a.step_ms, a.ttft_ms, a.model,
                a.decode_log_interval, a.sglang_verify_counter, a.tokenizer, a.kv_pool_tokens,
                a.cache_blocks, a.host_blocks)
    asyncio.run(_serve(a.port, o))


if __name__ == "__main__":
    main()
