"""What each engine's /metrics exposes, and the pure arithmetic over two or more scrapes.

Declarations are typed and frozen, one `EngineCounters` per engine kind in `ENGINE_COUNTERS`;
adapters reference `ENGINE_COUNTERS[kind]` instead of carrying metric names of their own. The
names, labels and semantics come from each engine's source (docs/engine-metrics.md cites the
files and commits), not from its README.

The arithmetic never sums a gauge across label sets: counters are additive over label sets
(dp ranks, `is_streaming`, `position`), a gauge such as SGLang's `sglang:spec_accept_length`
is one value per reporting rank, so N dp ranks summed would read N x AL.

Samples are `harness.engines.prometheus.Sample` dicts ("name{labels}" -> value).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.engines.prometheus import Sample

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs: hashable, printable

_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def split_key(key: str) -> tuple[str, Labels]:
    """'name{a="x",b="y"}' -> ('name', (('a', 'x'), ('b', 'y'))). Escapes are undone."""
    name, brace, rest = key.partition("{")
    if not brace:
        return key.strip(), ()
    pairs = [(k, v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\"))
             for k, v in _LABEL.findall(rest.rstrip("}"))]
    return name.strip(), tuple(sorted(pairs))


def label_text(labels: Labels, drop: Iterable[str] = ()) -> str:
    """A readable rank key: 'dp_rank=1,tp_rank=1' (labels in `drop` left out)."""
    skip = set(drop)
    return ",".join(f"{k}={v}" for k, v in labels if k not in skip) or "-"


@dataclass(frozen=True)
class Series:
    """One metric, optionally restricted to label values (e.g. token_position="0")."""

    name: str
    where: Labels = ()

    def by_labels(self, sample: Mapping[str, float]) -> dict[Labels, float]:
        """Every label set of this metric that matches `where`, with its value."""
        out: dict[Labels, float] = {}
        want = dict(self.where)
        for key, value in sample.items():
            if not (key == self.name or key.startswith(self.name + "{")):
                continue
            name, labels = split_key(key)
            if name != self.name:
                continue
            have = dict(labels)
            if all(have.get(k) == v for k, v in want.items()):
                out[labels] = value
        return out

    def total(self, sample: Mapping[str, float]) -> float | None:
        """Sum over matching label sets: right for counters only. None when absent."""
        vals = self.by_labels(sample)
        return float(sum(vals.values())) if vals else None


def _delta(series: Series | None, before: Sample, after: Sample) -> float | None:
    """after - before of a counter summed over its label sets. prometheus_client creates a
    labelled series at its first increment (SGLang, TensorRT-LLM, ATOM's per-count steps),
    so a series missing from a successful `before` scrape counted 0; from an empty (failed)
    scrape it is unknown. A counter that went backwards (engine restarted) is no delta."""
    if series is None:
        return None
    a, b = series.total(after), series.total(before)
    if b is None and before:
        b = 0.0
    if a is None or b is None or a < b:
        return None
    return a - b


@dataclass(frozen=True)
class TokenCounters:
    prompt: Series
    generation: Series
    cached: Series | None = None
    # llama.cpp counts only the prompt tokens it evaluated: prompt + cached = all prompt tokens.
    prompt_excludes_cached: bool = False


@dataclass(frozen=True)
class PrefixCacheCounters:
    """Prefix-cache hit rate = hits / queries, or hits / (queries + hits) when the queries
    counter leaves the hits out (llama.cpp's prompt_tokens_total)."""

    hits: Series
    queries: Series
    queries_exclude_hits: bool = False


@dataclass(frozen=True)
class SpecCounters:
    """Cumulative speculative-decoding counters. One draft = one request's verify step;
    AL = 1 + accepted / drafts (the bonus token is the 1)."""

    drafts: Series | None
    accepted: Series | None = None
    draft_tokens: Series | None = None
    # SGLang has no accepted counter: every verify step emits 1 + accepted tokens and every
    # request one more from prefill, so accepted = generation - drafts - requests.
    generation: Series | None = None
    requests: Series | None = None
    # Fallback where the drafts counter is missing but the draft length k is fixed:
    # (draft tokens, accepted tokens) counters, drafts = draft tokens / k (TensorRT-LLM's
    # iteration-level counters, kept even without per-request perf metrics).
    per_k: tuple[Series, Series] | None = None
    rank_label: str | None = None  # label that tells dp ranks apart (vLLM: engine)
    counted_at: Literal["step", "request-finish"] = "step"
    # True where accepted tokens beyond max_tokens/EOS are dropped before counting: the last
    # step of each request reads short, biasing AL low by about (AL-1)/2 tokens per request.
    truncated_at_finish: bool = False


@dataclass(frozen=True)
class AcceptanceGauge:
    """A gauge that reports the AL itself, one series per reporting rank."""

    name: str
    semantics: Literal["interval-mean", "last-iteration", "lifetime"]
    interval_steps: int | None = None  # decode steps one value averages (SGLang: 40)


@dataclass(frozen=True)
class EngineCounters:
    kind: str
    source: str  # repo:path@commit the declaration was read from
    metrics_path: str = "/metrics"
    tokens: TokenCounters | None = None
    prefix_cache: PrefixCacheCounters | None = None
    spec: SpecCounters | None = None
    al_gauge: AcceptanceGauge | None = None
    # How the injection knob draws the accepted count: per request and step, or once per
    # batch step for the whole batch (SGLang match-expected) - then verification's n is the
    # number of batch steps, not of drafts.
    injection_draw: Literal["request", "batch"] = "request"
    launch_requirements: tuple[str, ...] = ()  # what the launch must set for these to exist
    candidates: tuple[str, ...] = ()  # endpoint: kinds whose names are tried, in order


def _s(name: str, **where: str) -> Series:
    return Series(name, tuple(sorted(where.items())))


ENGINE_COUNTERS: dict[str, EngineCounters] = {
    "llamacpp": EngineCounters(
        kind="llamacpp",
        source="ggml-org/llama.cpp:tools/server/server-task.cpp@17f5f8a8 (to_metrics)",
        tokens=TokenCounters(_s("llamacpp:prompt_tokens_total"),
                             _s("llamacpp:tokens_predicted_total"),
                             _s("llamacpp:prompt_tokens_cached_total"),
                             prompt_excludes_cached=True),
        prefix_cache=PrefixCacheCounters(_s("llamacpp:prompt_tokens_cached_total"),
                                         _s("llamacpp:prompt_tokens_total"),
                                         queries_exclude_hits=True),
        spec=SpecCounters(drafts=_s("llamacpp:spec_decode_num_drafts_total"),
                          accepted=_s("llamacpp:spec_decode_num_accepted_tokens_total"),
                          draft_tokens=_s("llamacpp:spec_decode_num_draft_tokens_total")),
        launch_requirements=("endpoint_metrics=True (--metrics)",),
    ),
    "vllm": EngineCounters(
        kind="vllm",
        source="vllm-project/vllm:vllm/v1/spec_decode/metrics.py@016a8587 (SpecDecodingProm)",
        tokens=TokenCounters(_s("vllm:prompt_tokens_total"), _s("vllm:generation_tokens_total")),
        prefix_cache=PrefixCacheCounters(_s("vllm:prefix_cache_hits_total"),
                                         _s("vllm:prefix_cache_queries_total")),
        spec=SpecCounters(drafts=_s("vllm:spec_decode_num_drafts_total"),
                          accepted=_s("vllm:spec_decode_num_accepted_tokens_total"),
                          draft_tokens=_s("vllm:spec_decode_num_draft_tokens_total"),
                          rank_label="engine"),
    ),
    "sglang": EngineCounters(
        kind="sglang",
        source=("sgl-project/sglang:python/sglang/srt/managers/scheduler_metrics_mixin.py"
                "@01bb3c80; python/sglang/srt/observability/metrics_collector.py@016d8605"),
        tokens=TokenCounters(_s("sglang:prompt_tokens_total"),
                             _s("sglang:generation_tokens_total"),
                             _s("sglang:cached_tokens_total")),
        prefix_cache=PrefixCacheCounters(_s("sglang:cached_tokens_total"),
                                         _s("sglang:prompt_tokens_total")),
        # Newer SGLang only; counted when a request finishes, tokenizer-side (no dp_rank).
        spec=SpecCounters(drafts=_s("sglang:spec_verify_calls_total"),
                          generation=_s("sglang:generation_tokens_total"),
                          requests=_s("sglang:num_requests_total"),
                          counted_at="request-finish", truncated_at_finish=True),
        al_gauge=AcceptanceGauge("sglang:spec_accept_length", "interval-mean", 40),
        injection_draw="batch",
        launch_requirements=("--enable-metrics",),
    ),
    "trtllm": EngineCounters(
        kind="trtllm",
        source="NVIDIA/TensorRT-LLM:tensorrt_llm/metrics/collector.py@050f80de",
        metrics_path="/prometheus/metrics",
        tokens=TokenCounters(_s("trtllm_prompt_tokens_total"),
                             _s("trtllm_generation_tokens_total"),
                             _s("trtllm_prompt_cached_tokens_total")),
        prefix_cache=PrefixCacheCounters(_s("trtllm_prompt_cached_tokens_total"),
                                         _s("trtllm_prompt_tokens_total")),
        # Per-position counters (per request, at finish): position 0 is drafted once per
        # verify step, so its count is the number of drafts.
        spec=SpecCounters(drafts=_s("trtllm_spec_decode_drafted_tokens_total",
                                    token_position="0"),
                          accepted=_s("trtllm_spec_decode_accepted_tokens_total"),
                          per_k=(_s("trtllm_spec_decode_num_draft_tokens_total"),
                                 _s("trtllm_spec_decode_num_accepted_tokens_total")),
                          counted_at="request-finish"),
        al_gauge=AcceptanceGauge("trtllm_spec_decode_acceptance_length", "last-iteration"),
        launch_requirements=("return_perf_metrics: true", "enable_iter_perf_stats: true"),
    ),
    "atom": EngineCounters(
        kind="atom",
        source="ROCm/ATOM:atom/entrypoints/openai/metrics.py@1b2be632",
        tokens=TokenCounters(_s("atom:prompt_tokens_total"), _s("atom:generation_tokens_total")),
        prefix_cache=PrefixCacheCounters(_s("atom:prefix_cache_cached_tokens_total"),
                                         _s("atom:prefix_cache_full_tokens_total")),
        # Decode steps by accepted count, summed over the accepted_tokens label = drafts.
        spec=SpecCounters(drafts=_s("atom:mtp_decode_steps_total"),
                          accepted=_s("atom:mtp_accepted_tokens_total"),
                          draft_tokens=_s("atom:mtp_draft_tokens_total")),
        al_gauge=AcceptanceGauge("atom:mtp_average_tokens_per_forward", "lifetime"),
    ),
}
ENGINE_COUNTERS["endpoint"] = EngineCounters(
    kind="endpoint", source="union of the engines above",
    candidates=("vllm", "sglang", "trtllm", "atom", "llamacpp"))


def resolve(c: EngineCounters, sample: Sample) -> EngineCounters | None:
    """The declaration to use: `c` itself, or for an attached endpoint the first known engine
    whose token counters, drafts counter or AL gauge appear in `sample`."""
    if not c.candidates:
        return c
    for kind in c.candidates:
        k = ENGINE_COUNTERS[kind]
        names = [s.name for s in (k.tokens.generation if k.tokens else None,
                                  k.spec.drafts if k.spec else None) if s is not None]
        names += [k.al_gauge.name] if k.al_gauge else []
        if any(Series(n).by_labels(sample) for n in names):
            return k
    return None


@dataclass(frozen=True)
class TokenDeltas:
    prompt: float | None  # every prompt token, cached ones included
    generation: float | None
    cached: float | None


def token_deltas(c: EngineCounters, before: Sample, after: Sample) -> TokenDeltas:
    """Prompt, generated and cached tokens over the window, summed over label sets."""
    r = resolve(c, after)
    if r is None or r.tokens is None:
        return TokenDeltas(None, None, None)
    t = r.tokens
    prompt, cached = _delta(t.prompt, before, after), _delta(t.cached, before, after)
    if t.prompt_excludes_cached and prompt is not None:
        prompt += cached or 0.0
    return TokenDeltas(prompt, _delta(t.generation, before, after), cached)


def prefix_hit_rate(c: EngineCounters, before: Sample, after: Sample) -> float | None:
    """Share of prompt tokens served from the prefix cache over the window, or None."""
    r = resolve(c, after)
    if r is None or r.prefix_cache is None:
        return None
    p = r.prefix_cache
    hits, queries = _delta(p.hits, before, after), _delta(p.queries, before, after)
    if hits is None or queries is None:
        return None
    denom = queries + hits if p.queries_exclude_hits else queries
    return hits / denom if denom > 0 else None


@dataclass(frozen=True)
class RealisedAcceptance:
    al: float | None
    source: Literal["counters", "gauge-sampled"] | None
    drafts: float | None = None  # counters: request verify steps; gauge: steps, estimated
    accepted_tokens: float | None = None
    draft_tokens: float | None = None
    drafts_estimated: bool = False  # drafts inferred (gauge intervals x steps, or tokens / k)
    per_rank: dict[str, float] = field(default_factory=dict)  # AL per reporting rank
    samples: int = 0  # gauge readings used (distinct values for an interval-mean gauge)
    reason: str = ""  # why al is None, or a caveat


def realised_acceptance(c: EngineCounters, before: Sample, after: Sample,
                        samples: Sequence[tuple[float, Sample]] = (), *,
                        k: int | None = None) -> RealisedAcceptance:
    """The AL the engine realised over the window [before, after].

    From cumulative counters when the engine has them (and they moved); else from the AL
    gauge sampled through the window (`samples`: (time, scrape) pairs, e.g. every second),
    averaged per reporting rank (label set), then across ranks - never summed (see
    `_from_gauge`). `k` (draft length) lets TensorRT-LLM's iteration counters stand in for
    its per-request ones. `per_rank` holds each rank's AL where the metrics tell ranks apart."""
    r = resolve(c, after)
    if r is None:
        return RealisedAcceptance(None, None, reason="no known engine's metrics in the scrape")
    if r.spec is not None:
        got = _from_counters(r.spec, before, after, k)
        if got.al is not None:
            return got
    if r.al_gauge is not None and r.al_gauge.semantics != "lifetime" and samples:
        return _from_gauge(r.al_gauge, samples)
    if r.spec is None and r.al_gauge is None:
        return RealisedAcceptance(None, None, reason=f"{r.kind} declares no speculative metrics")
    hint = f" (launch needs {', '.join(r.launch_requirements)})" if r.launch_requirements else ""
    return RealisedAcceptance(None, None, reason=(
        f"{r.kind}: no speculative counters moved over the window and no AL gauge samples "
        f"were taken during it{hint}"))


def _per_rank_counters(spec: SpecCounters, before: Sample, after: Sample) -> dict[str, float]:
    """AL per dp rank from counters that carry a rank label (vLLM's `engine`)."""
    if spec.rank_label is None or spec.drafts is None or spec.accepted is None:
        return {}

    def by_rank(series: Series) -> dict[str, float]:
        a, b = series.by_labels(after), series.by_labels(before)
        out: dict[str, float] = {}
        for labels, value in a.items():
            rank = dict(labels).get(spec.rank_label or "", "-")
            out[rank] = out.get(rank, 0.0) + value - b.get(labels, 0.0)
        return out

    drafts, accepted = by_rank(spec.drafts), by_rank(spec.accepted)
    return {f"{spec.rank_label}={rank}": 1.0 + accepted.get(rank, 0.0) / d
            for rank, d in sorted(drafts.items()) if d > 0}


def _from_counters(spec: SpecCounters, before: Sample, after: Sample,
                   k: int | None) -> RealisedAcceptance:
    drafts = _delta(spec.drafts, before, after)
    draft_tokens = _delta(spec.draft_tokens, before, after)
    if spec.generation is not None:  # SGLang: derived from tokens
        accepted = _derived_accepted(spec, before, after, drafts) if drafts else None
    else:
        accepted = _delta(spec.accepted, before, after)
    estimated = False
    if not drafts and spec.per_k is not None and k:
        tokens, acc = (_delta(s, before, after) for s in spec.per_k)
        if tokens:
            drafts, draft_tokens, accepted, estimated = tokens / k, tokens, acc, True
    if not drafts:
        return RealisedAcceptance(None, "counters", reason="the drafts counter did not move")
    if accepted is None:
        return RealisedAcceptance(None, "counters", drafts=drafts,
                                  reason="the accepted-tokens counter is missing")
    caveat = ("accepted tokens past max_tokens/EOS are not counted: AL reads low by about "
              "(AL-1)/2 tokens per request" if spec.truncated_at_finish else "")
    return RealisedAcceptance(1.0 + accepted / drafts, "counters", drafts=drafts,
                              accepted_tokens=accepted, draft_tokens=draft_tokens,
                              drafts_estimated=estimated,
                              per_rank=_per_rank_counters(spec, before, after), reason=caveat)


def _derived_accepted(spec: SpecCounters, before: Sample, after: Sample,
                      drafts: float) -> float | None:
    """Every verify step emits 1 + accepted tokens and every request one more from prefill:
    accepted = generated - verify steps - requests."""
    gen, reqs = _delta(spec.generation, before, after), _delta(spec.requests, before, after)
    if gen is None:
        return None
    return max(0.0, gen - drafts - (reqs or 0.0))


def _from_gauge(g: AcceptanceGauge, samples: Sequence[tuple[float, Sample]]
                ) -> RealisedAcceptance:
    """The gauge's mean per label set (one reporting rank each), then the mean of the ranks -
    never their sum. Zero and NaN readings (a rank that has not decoded yet) are left out.

    An interval-mean gauge (SGLang) is averaged over its distinct readings: each new value is
    one decode-log interval of `interval_steps` steps, so equal weights are step weights.
    Averaging every sample instead would weight an interval by how long it lasted, and
    intervals whose requests finished early (high AL) are short: a low bias. Drafts are then
    estimated as distinct readings x interval_steps (consecutive equal intervals count once:
    an underestimate, so verification errs towards wider intervals). A last-iteration gauge
    (TensorRT-LLM) is averaged over all samples."""
    distinct = g.semantics == "interval-mean"
    per_rank: dict[Labels, list[float]] = {}
    for _, sample in sorted(samples, key=lambda ts: ts[0]):
        for labels, value in Series(g.name).by_labels(sample).items():
            if not (value > 0 and math.isfinite(value)):
                continue
            seen = per_rank.setdefault(labels, [])
            if not (distinct and seen and seen[-1] == value):
                seen.append(value)
    if not per_rank:
        return RealisedAcceptance(None, "gauge-sampled", samples=len(samples),
                                  reason=f"{g.name} was never above 0 in the window")
    means = {label_text(lab, drop=("model_name", "engine_type")): sum(v) / len(v)
             for lab, v in per_rank.items()}
    readings = sum(len(v) for v in per_rank.values())
    steps = readings * g.interval_steps if distinct and g.interval_steps else None
    return RealisedAcceptance(sum(means.values()) / len(means), "gauge-sampled", drafts=steps,
                              drafts_estimated=True, per_rank=dict(sorted(means.items())),
                              samples=readings)


def independent_draws(c: EngineCounters, r: RealisedAcceptance,
                      mean_batch: float | None = None) -> float | None:
    """The n that `harness.spec.verify.verify` needs: how many independent accepted-count
    draws the realised AL averages.

    Per-request injection (vLLM, TensorRT-LLM, ATOM, llama.cpp): the drafts. Per-batch
    injection (SGLang match-expected, one draw per verify step of a rank): the sampled gauge
    already counts steps (distinct readings x interval); a request-level drafts counter must be
    divided by the mean running batch per rank (e.g. concurrency / dp); None without it."""
    if r.drafts is None:
        return None
    if c.injection_draw == "batch" and r.source == "counters":
        return r.drafts / mean_batch if mean_batch else None
    return r.drafts
