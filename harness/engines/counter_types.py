"""The typed declarations of what an engine's /metrics exposes (one `EngineCounters` per
engine kind, declared by each adapter class as its `metrics`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.engines.series import Series


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
    # As SpecCounters.truncated_at_finish: the step that finishes a request counts only the
    # tokens it kept (SGLang), so the gauge reads short on short outputs.
    truncated_at_finish: bool = False


@dataclass(frozen=True)
class ServerCacheCounters:
    """Where prompt tokens came from and how full the KV cache was: what InferenceX's agentic
    aggregation reads per engine (docs/upstream/agentx.md §2.3). Counters are summed over
    label sets; gauges are one value per reporting rank (dp rank), never summed, except the
    pool size, which each rank holds on its own."""

    # Cumulative prompt tokens split by a source label; `sources` maps the label's values to
    # ours: device, host, external (another tier or a KV transfer), computed.
    by_source: Series | None = None
    source_label: str = ""
    sources: tuple[tuple[str, str], ...] = ()
    # All prompt tokens, the hit rates' denominator; None: the sum over `by_source`.
    prompt: Series | None = None
    computed: Series | None = None  # prompt tokens computed (not cached), where counted apart
    hit_rate_gauge: Series | None = None  # the engine's own hit-rate gauge (fraction or %)
    kv_usage: tuple[Series, ...] = ()  # GPU KV-cache usage gauge; the first present is read
    host_usage: Series | None = None  # host (CPU) KV-cache usage gauge
    host_tokens: tuple[Series, Series] | None = None  # (used, total) host-tier tokens
    pool_tokens: Series | None = None  # KV pool size in tokens, per rank
    pool_blocks: tuple[Series, Series] | None = None  # (blocks, tokens per block)


@dataclass(frozen=True)
class EngineCounters:
    kind: str
    source: str  # repo:path@commit the declaration was read from
    metrics_path: str = "/metrics"
    tokens: TokenCounters | None = None
    prefix_cache: PrefixCacheCounters | None = None
    spec: SpecCounters | None = None
    al_gauge: AcceptanceGauge | None = None
    cache: ServerCacheCounters | None = None
    # How the injection knob draws the accepted count: per request and step, or once per
    # batch step for the whole batch (SGLang match-expected) - then verification's n is the
    # number of batch steps, not of drafts.
    injection_draw: Literal["request", "batch"] = "request"
    launch_requirements: tuple[str, ...] = ()  # what the launch must set for these to exist
    candidates: tuple[str, ...] = ()  # endpoint: kinds whose names are tried, in order


def series(name: str, **where: str) -> Series:
    """A metric with fixed label values, as an adapter declares it."""
    return Series(name, tuple(sorted(where.items())))


