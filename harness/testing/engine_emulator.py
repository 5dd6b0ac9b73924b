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

Decoding: requests go round-robin to --dp ranks; each rank runs decode steps every --step-ms;
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
import os
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from harness.spec.acceptance import synthetic_rates
from harness.testing.spawn import serve_forever
from harness.testing.token_count import PromptCounter, content_text

ENGINES = ("sglang", "vllm", "trtllm", "atom")
MP_HELP = "Multiprocess metric"  # what prometheus_client's MultiProcessCollector writes


@dataclass
class Options:
    engine: str = "vllm"
    dp: int = 1
    al: float = 2.5
    k: int = 3
    al_bias: float = 0.0
    seed: int = 0
    step_ms: float = 1.0
    ttft_ms: float = 2.0
    model: str = "emulated"
    decode_log_interval: int = 40
    sglang_verify_counter: bool = False
    tokenizer: str = ""  # a tokenizer.json: count prompt tokens as the real engine would


@dataclass
class Req:
    prompt_tokens: int
    max_tokens: int
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    sent: int = 0
    steps: int = 0  # verify steps (drafts) of this request
    drafted_pos: list[int] = field(default_factory=list)  # TensorRT-LLM per-request stats
    accepted_pos: list[int] = field(default_factory=list)
    cancelled: bool = False

    @property
    def remaining(self) -> int:
        return self.max_tokens - self.sent


@dataclass
class Rank:
    idx: int
    rng: random.Random
    active: list[Req] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    c: dict[str, float] = field(default_factory=dict)  # this rank's counters
    per_pos: list[int] = field(default_factory=list)  # vLLM accepted per position
    forward_ct: int = 0
    interval_tokens: int = 0  # SGLang: accepted + 1 summed over the interval's requests
    interval_ct: int = 0  # SGLang: request verify steps in the interval
    gauge: float | None = None  # SGLang spec_accept_length once first logged
    gauge_rate: float = 0.0


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


def go_float(v: float) -> str:
    """A float as prometheus_client writes it (floatToGoString)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    s = repr(float(v))
    dot = s.find(".")
    if v > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return s


def family(name: str, typ: str, help_: str, samples: list[tuple[dict[str, str], float]]
           ) -> list[str]:
    """One metric family in Prometheus text format 0.0.4, labels sorted as the client does."""
    lines = [f"# HELP {name} {help_}", f"# TYPE {name} {typ}"]
    for labels, value in samples:
        lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        lines.append(f"{name}{{{lab}}} {go_float(value)}" if lab else f"{name} {go_float(value)}")
    return lines


class Emulator:
    def __init__(self, o: Options) -> None:
        if o.engine not in ENGINES:
            raise ValueError(f"--engine must be one of {ENGINES}")
        self.o = o
        self.rates = synthetic_rates(min(max(o.al + o.al_bias, 1.0), o.k + 1.0), o.k)
        self.ranks = [Rank(i, random.Random(o.seed * 1000 + i), per_pos=[0] * o.k)
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
        e = self.o.engine
        self.inc("requests")
        if e == "vllm":  # its counters moved per step
            return
        self.inc("prompt", req.prompt_tokens)
        self.inc("generation", req.sent)
        if e == "sglang":
            self.inc("verify_calls", req.steps)
        elif e == "trtllm":
            for i, (d, a) in enumerate(zip(req.drafted_pos, req.accepted_pos, strict=True)):
                self.inc(f"drafted_pos:{i}", d)
                self.inc(f"accepted_pos:{i}", a)

    # ---- HTTP -----------------------------------------------------------------------------

    async def admit(self, req: Req) -> Rank:
        """Prefill on a rank (round robin): after TTFT one token, then decode steps."""
        rank = next(self.rr)
        if self.o.engine == "vllm":
            self.inc("prompt", req.prompt_tokens, rank)
            self.inc("prefix_queries", req.prompt_tokens, rank)
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
        req = Req(prompt_tokens=self.count(text),
                  max_tokens=max(1, int(body.get("max_tokens") or 16)))
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
        render = {"vllm": self.render_vllm, "sglang": self.render_sglang,
                  "trtllm": self.render_trtllm, "atom": self.render_atom}[self.o.engine]
        return web.Response(text="\n".join(render()) + "\n",
                            content_type="text/plain", charset="utf-8")

    async def trtllm_stats(self, _: web.Request) -> web.Response:
        """trtllm-serve's /metrics: the iteration stats queued since the last read."""
        out = list(self.iter_stats)
        self.iter_stats.clear()
        return web.Response(body=orjson.dumps(out), content_type="application/json")

    async def atom_mtp_stats(self, _: web.Request) -> web.Response:
        return web.json_response(self.atom_mtp())

    # ---- /metrics per engine --------------------------------------------------------------

    def render_vllm(self) -> list[str]:
        """vllm/v1/metrics/loggers.py + vllm/v1/spec_decode/metrics.py: labels model_name and
        engine (the dp rank); plain prometheus_client, so counters carry `_created`."""
        def per_rank(key: str) -> list[tuple[dict[str, str], float]]:
            return [({"engine": str(r.idx), "model_name": self.o.model}, r.c.get(key, 0.0))
                    for r in self.ranks]

        out: list[str] = []
        out += family("vllm:num_requests_running", "gauge",
                      "Number of requests in model execution batches.",
                      [({"engine": str(r.idx), "model_name": self.o.model}, len(r.active))
                       for r in self.ranks])
        for key, name, help_ in (
                ("prompt", "prompt_tokens", "Number of prefill tokens processed."),
                ("generation", "generation_tokens", "Number of generation tokens processed."),
                ("prefix_queries", "prefix_cache_queries",
                 "Prefix cache queries, in terms of number of queried tokens."),
                ("prefix_hits", "prefix_cache_hits",
                 "Prefix cache hits, in terms of number of cached tokens."),
                ("drafts", "spec_decode_num_drafts", "Number of spec decoding drafts."),
                ("draft_tokens", "spec_decode_num_draft_tokens", "Number of draft tokens."),
                ("accepted", "spec_decode_num_accepted_tokens", "Number of accepted tokens.")):
            out += self._counter("vllm:" + name, help_, per_rank(key))
        pos = [({"engine": str(r.idx), "model_name": self.o.model, "position": str(i)}, v)
               for r in self.ranks for i, v in enumerate(r.per_pos)]
        out += self._counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                             "Accepted tokens per draft position.", pos)
        return out

    def _counter(self, base: str, help_: str, samples: list[tuple[dict[str, str], float]]
                 ) -> list[str]:
        """A prometheus_client Counter in the default registry: `_total` plus `_created`."""
        return (family(base + "_total", "counter", help_, samples)
                + family(base + "_created", "gauge", help_,
                         [(lab, self.created) for lab, _ in samples]))

    def render_sglang(self) -> list[str]:
        """SchedulerMetricsCollector gauges per rank (labels: model_name, engine_type, tp_rank,
        pp_rank, dp_rank when dp > 1), TokenizerMetricsCollector counters server-wide. Series
        exist only once set, as in multiprocess mode."""
        out: list[str] = []
        logged = [r for r in self.ranks if r.gauge is not None]
        for name, get in (("sglang:num_running_reqs", lambda r: len(r.active)),
                          ("sglang:spec_accept_length", lambda r: r.gauge),
                          ("sglang:spec_accept_rate", lambda r: r.gauge_rate)):
            if logged:
                out += family(name, "gauge", MP_HELP,
                              [(self._sglang_rank_labels(r), get(r)) for r in logged])
        lab = {"engine_type": "unified", "model_name": self.o.model}
        stream = {**lab, "is_streaming": "true"} if self.o.sglang_verify_counter else lab
        for key, name, labels in (("prompt", "prompt_tokens_total", stream),
                                  ("generation", "generation_tokens_total", stream),
                                  ("requests", "num_requests_total", stream),
                                  ("verify_calls", "spec_verify_calls_total", lab)):
            if key == "verify_calls" and not self.o.sglang_verify_counter:
                continue
            if self.c.get(key):
                out += family("sglang:" + name, "counter", MP_HELP, [(labels, self.c[key])])
        return out

    def _sglang_rank_labels(self, r: Rank) -> dict[str, str]:
        labels = {"engine_type": "unified", "model_name": self.o.model, "pp_rank": "0",
                  "tp_rank": str(r.idx)}  # dp attention: attn_tp 1, tp rank = dp rank
        if self.o.dp > 1:
            labels["dp_rank"] = str(r.idx)
        return labels

    def render_trtllm(self) -> list[str]:
        """tensorrt_llm/metrics/collector.py under trtllm-serve's multiprocess registry:
        labels engine_type/model_name 'undefined'; gauges (mode 'all') carry the pid."""
        lab = {"engine_type": "undefined", "model_name": "undefined"}
        # The one counter the collector creates eagerly (its .labels() call in __init__).
        out = family("trtllm_prompt_cached_tokens_total", "counter", MP_HELP,
                     [(lab, self.c.get("cached", 0.0))])
        if self.iterations:
            out += family("trtllm_spec_decode_acceptance_length", "gauge", MP_HELP,
                          [({**lab, "pid": str(os.getpid())}, self.c.get("iter_al", 0.0))])
        for key, name in (("requests", "request_success_total"),
                          ("prompt", "prompt_tokens_total"),
                          ("generation", "generation_tokens_total"),
                          ("iter_draft_tokens", "spec_decode_num_draft_tokens_total"),
                          ("iter_accepted_tokens", "spec_decode_num_accepted_tokens_total")):
            if self.c.get(key):
                labels = {**lab, "finished_reason": "length"} if key == "requests" else lab
                out += family("trtllm_" + name, "counter", MP_HELP, [(labels, self.c[key])])
        for key, name in (("drafted_pos", "spec_decode_drafted_tokens_total"),
                          ("accepted_pos", "spec_decode_accepted_tokens_total")):
            pos = [({**lab, "token_position": str(i)}, self.c[f"{key}:{i}"])
                   for i in range(self.o.k) if self.c.get(f"{key}:{i}")]
            if pos:
                out += family("trtllm_" + name, "counter", MP_HELP, pos)
        return out

    def atom_mtp(self) -> dict[str, Any]:
        """ATOM's aggregated spec stats (LLMEngine.get_metrics_statistics), summed over ranks."""
        dist = {a: int(self.c.get(f"mtp_steps:{a}", 0)) for a in range(self.o.k + 1)}
        dist = {a: n for a, n in dist.items() if n}
        steps, drafted = sum(dist.values()), self.c.get("mtp_draft_tokens", 0.0)
        accepted = self.c.get("mtp_accepted_tokens", 0.0)
        return {"enabled": True, "total_draft_tokens": int(drafted),
                "total_accepted_tokens": int(accepted),
                "acceptance_rate": accepted / drafted if drafted else 0.0,
                "average_tokens_per_forward": 1 + accepted / steps if steps else 0.0,
                "distribution": dist}

    def render_atom(self) -> list[str]:
        """atom/entrypoints/openai/metrics.py: CounterMetricFamily/GaugeMetricFamily without
        labels (aggregated over dp ranks); counters render as `<name>_total`."""
        m = self.atom_mtp()
        out = family("atom:requests_running", "gauge",
                     "Number of requests currently running across data-parallel ranks.",
                     [({}, sum(len(r.active) for r in self.ranks))])
        for key, name, help_ in (
                ("requests", "requests_finished", "Number of requests completed by the scheduler."),
                ("prompt", "prompt_tokens", "Number of prompt tokens in completed requests."),
                ("generation", "generation_tokens",
                 "Number of generated tokens in completed requests.")):
            out += family(f"atom:{name}_total", "counter", help_, [({}, self.c.get(key, 0.0))])
        out += family("atom:mtp_draft_tokens_total", "counter",
                      "Number of speculative draft tokens considered.",
                      [({}, m["total_draft_tokens"])])
        out += family("atom:mtp_accepted_tokens_total", "counter",
                      "Number of accepted speculative bonus tokens.",
                      [({}, m["total_accepted_tokens"])])
        out += family("atom:mtp_acceptance_rate", "gauge",
                      "Fraction of speculative draft tokens accepted.",
                      [({}, m["acceptance_rate"])])
        out += family("atom:mtp_average_tokens_per_forward", "gauge",
                      "Average emitted tokens per speculative decode forward.",
                      [({}, m["average_tokens_per_forward"])])
        out += family("atom:mtp_decode_steps_total", "counter",
                      "Number of speculative decode steps by accepted bonus-token count.",
                      [({"accepted_tokens": str(a)}, n) for a, n in m["distribution"].items()])
        return out

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

        async def start_ranks(_: web.Application) -> None:
            self.tasks = [asyncio.ensure_future(self.rank_loop(r)) for r in self.ranks]

        app.on_startup.append(start_ranks)
        return app


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
    a = p.parse_args(argv)
    o = Options(a.engine, a.dp, a.al, a.k, a.al_bias, a.seed, a.step_ms, a.ttft_ms, a.model,
                a.decode_log_interval, a.sglang_verify_counter, a.tokenizer)
    asyncio.run(_serve(a.port, o))


if __name__ == "__main__":
    main()
