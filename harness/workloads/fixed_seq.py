"""Fixed-sequence workload with InferenceX's semantics (docs/methodology.md §2).

Per point at concurrency C: 10*C measured and 2*C warmup requests, each with ISL and OSL drawn
uniformly from [ratio*L, L]; prompts are random token ids made exact for the model's tokenizer
(decode -> re-encode until the length holds), `ignore_eos` with `max_tokens` = OSL. The
server's `usage.prompt_tokens` is recorded against the built length and mismatches flagged.

With `chat_template` the random text becomes the user turn of the model's chat template and the
templated prompt has exactly ISL tokens (speculative points: raw random tokens inflate
acceptance, docs/methodology.md §2).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from harness.config.schema import ScenarioConfig, SweepConfig
from harness.engines.hints import EngineHints
from harness.engines.sampler import Sampled
from harness.record.validity import Rule, ValiditySettings, schedule_rule
from harness.records import PHASE_MEASURED, PHASE_WARMUP, RequestSpec
from harness.workloads.base import (
    LoadLevel,
    Measurement,
    OnDone,
    Target,
    Workload,
    measured_window,
)
from harness.workloads.base import stream_body as stream_body  # its home before base.py
from harness.workloads.fixed_checks import check_fixed

_MAX_ROUNDS = 16


class PromptLengthError(RuntimeError):
    pass


@dataclass
class PromptBuilder:
    """Builds prompts of an exact token count for one tokenizer and one request format."""

    tokenizer: Any
    api: str  # completions | chat
    chat_template: bool
    vocab: np.ndarray  # token ids random prompts are drawn from (no special tokens)

    @classmethod
    def for_tokenizer(cls, tokenizer: Any, api: str, chat_template: bool) -> PromptBuilder:
        return cls(tokenizer, api, chat_template or api == "chat", prompt_vocabulary(tokenizer))

    def _random_text(self, rng: np.random.Generator, n: int) -> str:
        """Text that re-encodes to exactly n tokens (no special tokens added)."""
        tok = self.tokenizer
        ids = rng.choice(self.vocab, size=max(n, 0)).tolist()
        for _ in range(_MAX_ROUNDS):
            text = tok.decode(ids)
            back = tok.encode(text, add_special_tokens=False)
            if len(back) == n:
                return text
            if len(back) > n:
                ids = back[:n]
            else:
                ids = back + rng.choice(self.vocab, size=n - len(back)).tolist()
        return tok.decode(ids)

    def messages(self, text: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": text}]

    def render(self, text: str) -> str:
        """What the server tokenizes for a completions request."""
        if not self.chat_template:
            return text
        return self.tokenizer.apply_chat_template(
            self.messages(text), tokenize=False, add_generation_prompt=True
        )

    def count(self, text: str) -> int:
        """Prompt tokens the server will count for this content."""
        tok = self.tokenizer
        if self.api == "chat":
            ids = tok.apply_chat_template(
                self.messages(text), tokenize=True, add_generation_prompt=True
            )
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            return len(ids)
        return len(tok(self.render(text))["input_ids"])

    def build(self, rng: np.random.Generator, isl: int) -> tuple[str, int]:
        """Content whose full prompt is exactly `isl` tokens, and that count."""
        overhead = self.count("")
        want = isl - overhead
        if want < 1:
            raise PromptLengthError(f"ISL {isl} is shorter than the prompt format ({overhead})")
        for _ in range(_MAX_ROUNDS):
            text = self._random_text(rng, want)
            got = self.count(text)
            if got == isl:
                return text, got
            want += isl - got
        return text, got  # the closest we got; the mismatch is recorded per request


def prompt_vocabulary(tokenizer: Any) -> np.ndarray:
    """Token ids random prompts are drawn from: no special tokens, and none that is only
    whitespace, holds a control character (\r, \n, \t...) or decodes to a partial UTF-8
    sequence. Runs of those tokenize differently in different implementations of the same
    tokenizer (llama.cpp merges "\r\n   \r\n" that Hugging Face splits), so a prompt exact for
    ours would not be exact for the server's."""
    special = set(tokenizer.all_special_ids)
    keep = []
    for i in range(len(tokenizer)):
        if i in special:
            continue
        text = tokenizer.decode([i])
        if (not text.strip() or "\ufffd" in text
                or any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in text)):
            continue
        keep.append(i)
    return np.array(keep, dtype=np.int64)


def draw_lengths(rng: np.random.Generator, length: int, ratio: float, n: int) -> np.ndarray:
    """n lengths uniform in [floor(ratio*length), length] (InferenceX --random-range-ratio)."""
    lo = max(1, int(length * ratio))
    return rng.integers(lo, length + 1, size=n)


@dataclass
class FixedPointRequests:
    warmup: list[RequestSpec]
    measured: list[RequestSpec]


def build_fixed_point(
    scenario: ScenarioConfig,
    concurrency: int,
    builder: PromptBuilder,
    rng: np.random.Generator,
    body_base: dict[str, Any],
    id_prefix: str,
    progress: Callable[[int], None] | None = None,
    counts: tuple[int, int] | None = None,
) -> FixedPointRequests:
    """All requests of one point, encoded before any timing starts. `counts`: (warmup,
    measured) when not 2xC and 10xC (open loop)."""
    n_warm, n_meas = counts or (scenario.warmup_per_conc * concurrency,
                                scenario.requests_per_conc * concurrency)
    n = n_warm + n_meas
    isls = draw_lengths(rng, scenario.isl, scenario.range_ratio, n)
    osls = draw_lengths(rng, scenario.osl, scenario.range_ratio, n)
    path = "/v1/chat/completions" if builder.api == "chat" else "/v1/completions"
    specs: list[RequestSpec] = []
    built = [builder.build(rng, int(isls[i])) for i in range(n_warm, n)]
    if scenario.warmup_prompts == "first":  # InferenceX: warmups are copies of the first prompt
        built = [built[0]] * n_warm + built
        isls[:n_warm], osls[:n_warm] = isls[n_warm], osls[n_warm]
    else:
        built = [builder.build(rng, int(isls[i])) for i in range(n_warm)] + built
    for i in range(n):
        text, expected = built[i]
        body = {**body_base, **request_fields(builder.api, builder, text, int(osls[i]))}
        if scenario.seed_requests:
            body["seed"] = int(rng.integers(0, 2**31 - 1))
        phase = PHASE_WARMUP if i < n_warm else PHASE_MEASURED
        specs.append(
            RequestSpec(
                request_id=f"{id_prefix}-{phase[0]}{i}",
                path=path,
                body=orjson.dumps(body),
                expected_prompt_tokens=expected,
                max_tokens=int(osls[i]),
                phase=phase,
                tags={"target_isl": int(isls[i]),
                      "prompt_sha1": hashlib.sha1(text.encode()).hexdigest()[:16]},
            )
        )
        if progress is not None:
            progress(1)
    return FixedPointRequests(specs[:n_warm], specs[n_warm:])


def request_fields(api: str, builder: Any, text: str, max_tokens: int) -> dict[str, Any]:
    """The per-request fields InferenceX's client sends (backend_request_func.py): completions
    carry `prompt`, `max_tokens`, `best_of: 1`, `logprobs: null`; chat carries the text as one
    user turn of content parts and `max_completion_tokens`."""
    if api == "chat":
        return {"messages": builder.messages(text), "max_completion_tokens": max_tokens}
    return {"prompt": builder.render(text), "max_tokens": max_tokens, "best_of": 1,
            "logprobs": None}


class FixedSequenceWorkload(Workload):
    """InferenceX's fixed-sequence point: a closed loop of C requests in flight over 10*C
    measured requests after 2*C warmup ones, prompts built and encoded before the engine
    starts."""

    kind = "fixed"
    open_loop_arrivals = searchable = profilable = True
    fixed_shape = True
    describes = "fixed-sequence scenarios"

    @classmethod
    def check(cls, sc: SweepConfig, where: Callable[[str], str]) -> None:
        check_fixed(sc, where)

    def __init__(self, sc: SweepConfig, tokenizer: Any, root: Any = None) -> None:
        self.sc, self.tokenizer = sc, tokenizer
        self.requests: dict[str, FixedPointRequests] = {}

    def hints(self) -> EngineHints:
        s = self.sc.scenario
        return EngineHints(prefix_caching=False, longest_request_tokens=s.isl + s.osl)

    def chat_template(self) -> bool:
        """Speculative points run real acceptance on templated text (docs/methodology.md §2)."""
        scen = self.sc.scenario
        if scen.chat_template is not None:
            return scen.chat_template
        return self.sc.speculator.method != "none"

    def counts(self, level: LoadLevel) -> tuple[int, int]:
        """(warmup, measured) requests: 2xC and 10xC closed loop; open loop, per unit of rate
        (rounded up) unless scenario.num_requests sets the measured count."""
        s = self.sc.scenario
        if level.rate is None:
            return s.warmup_per_conc * level.concurrency, s.requests_per_conc * level.concurrency
        unit = max(1, math.ceil(level.rate))
        return s.warmup_per_conc * unit, s.num_requests or s.requests_per_conc * unit

    def expected_requests(self, level: LoadLevel) -> int:
        return sum(self.counts(level))

    def builder(self) -> Any:
        """InferenceX's random prompts, or the exact filtered ones (scenario.prompts)."""
        scen = self.sc.scenario
        if scen.prompts == "inferencex":
            from harness.workloads.inferencex_prompts import InferenceXPromptBuilder

            return InferenceXPromptBuilder(self.tokenizer, scen.api, self.chat_template(),
                                           encoder=self.sc.model.chat_encoder)
        return PromptBuilder.for_tokenizer(self.tokenizer, scen.api, self.chat_template())

    def prepare(self, levels: list[LoadLevel], body: dict[str, Any]) -> None:
        from tqdm import tqdm

        scen = self.sc.scenario
        builder = self.builder()
        total = sum(self.expected_requests(lv) for lv in levels)
        with tqdm(total=total, desc="building prompts", unit="req", leave=False) as bar:
            for lv in levels:
                if lv.point_id in self.requests:
                    continue
                rng = np.random.default_rng([lv.seed, lv.concurrency, lv.repeat, 0xF1,
                                             *rate_key(lv)])
                self.requests[lv.point_id] = build_fixed_point(
                    scen, lv.concurrency, builder, rng, dict(body), id_prefix=lv.point_id,
                    progress=bar.update, counts=self.counts(lv))

    def run(self, target: Target, level: LoadLevel, on_done: OnDone = None) -> Measurement:
        reqs = self.requests[level.point_id]
        if level.rate is not None:
            from harness.workloads.open_loop import measure_open_loop

            return measure_open_loop(target, reqs.warmup, reqs.measured, level, self.sc.scenario,
                                     on_done)
        return measure_closed_loop(target, reqs.warmup, reqs.measured, level.concurrency,
                                   on_done)

    def measured_facts(self, meas: Measurement, metrics: Mapping[str, Any],
                       samples: Sampled = ()) -> dict[str, Any]:
        if "request_rate" not in meas.extra:
            return dict(meas.extra)
        from harness.client.open_loop import lag_figures

        return {**meas.extra, **lag_figures(meas.measured.records)}

    def rules(self, metrics: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
        """Open loop: the client must have kept its schedule (as timestamped replay)."""
        if metrics.get("request_rate") is None:
            return []
        return schedule_rule(metrics.get("send_lag_p99_ms"))


def rate_key(level: LoadLevel) -> tuple[int, ...]:
    """An open-loop point's rate in the prompt seed (mHz; closed-loop seeds unchanged)."""
    return () if level.rate is None else (round(level.rate * 1000),)


def measure_closed_loop(target: Target, warmup: list[RequestSpec], measured: list[RequestSpec],
                        concurrency: int, on_done: OnDone = None) -> Measurement:
    """Warmup (excluded from every metric), a /metrics scrape, the measured phase, a scrape."""
    from harness.client.closed_loop import run_closed_loop
    from harness.client.streaming import PhaseResult, StreamingClient, run_async

    settings = dataclasses.replace(target.settings, base_url=target.base_url)

    def phase(specs: list[RequestSpec]) -> PhaseResult:
        if settings.workers > 1:  # the C slots split over client processes
            from harness.client.workers import closed_loop_over_workers

            return closed_loop_over_workers(settings, specs, concurrency, settings.workers,
                                            on_done)
        return run_async(one_process(specs))

    async def one_process(specs: list[RequestSpec]) -> PhaseResult:
        async with StreamingClient(settings) as client:
            return await run_closed_loop(client, specs, concurrency, on_done)

    warm = phase(warmup)
    before = target.scrape()
    with measured_window(target):
        meas = phase(measured)
    after = target.scrape()
    return Measurement(warm, meas, before, after)

