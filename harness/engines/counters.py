"""What each engine's /metrics exposes, and the pure arithmetic over two or more scrapes: one
import for the rest of the harness.

The parts live apart: `series` (a metric with label values, counter sums and deltas),
`counter_types` (the typed declarations; each adapter class declares its own as `metrics`),
`engine_counters` (a kind's declaration read from the registry, and `resolve` for attached
endpoints), `acceptance_counters`
(the realised acceptance length), `server_cache` (hit rates by source and KV usage). Here:
token and prefix-cache deltas.

The arithmetic never sums a gauge across label sets: counters are additive over label sets
(dp ranks, `is_streaming`, `position`), a gauge such as SGLang's `sglang:spec_accept_length`
is one value per reporting rank, so N dp ranks summed would read N x AL.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engines.acceptance_counters import (
    RealisedAcceptance,
    independent_draws,
    realised_acceptance,
)
from harness.engines.counter_types import (
    AcceptanceGauge,
    EngineCounters,
    PrefixCacheCounters,
    ServerCacheCounters,
    SpecCounters,
    TokenCounters,
)
from harness.engines.engine_counters import ENGINE_COUNTERS, resolve
from harness.engines.prometheus import Sample
from harness.engines.series import Labels, Series, delta, label_text, split_key

__all__ = ["ENGINE_COUNTERS", "AcceptanceGauge", "EngineCounters", "Labels",
           "PrefixCacheCounters", "RealisedAcceptance", "Series", "ServerCacheCounters",
           "SpecCounters", "TokenCounters", "TokenDeltas", "delta", "independent_draws",
           "label_text", "prefix_counts", "prefix_hit_rate", "realised_acceptance", "resolve",
           "split_key", "token_deltas"]


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
    prompt, cached = delta(t.prompt, before, after), delta(t.cached, before, after)
    if t.prompt_excludes_cached and prompt is not None:
        prompt += cached or 0.0
    return TokenDeltas(prompt, delta(t.generation, before, after), cached)


def prefix_counts(c: EngineCounters, sample: Sample) -> tuple[float | None, float | None]:
    """Cumulative (hit tokens, queried tokens) in one scrape, queried always counting the hits,
    so that hits <= queried and Δhits / Δqueried is a ratio on every engine. Each engine's
    counters, as its source counts them:

    - llama.cpp: prompt_tokens_total counts the prompt tokens it evaluated, the cached ones
      left out; prompt_tokens_cached_total the ones it reused (docs/engine-metrics.md,
      "llama.cpp server"): queried = prompt + cached. Read alone, prompt_tokens_total is
      smaller than the hits on any prefix-heavy run (7,013 hits over 1,929 "queries").
    - vLLM: prefix_cache_queries counts every prompt token looked up, prefix_cache_hits the
      ones found (vllm-project/vllm:vllm/v1/core/kv_cache_manager.py@ace980e6,
      get_computed_blocks: queries += request.num_tokens, hits += num_new_computed_tokens).
    - SGLang: each finished request adds all its prompt tokens to prompt_tokens_total and the
      ones its prefix match found to cached_tokens_total (sgl-project/sglang:python/sglang/
      srt/metrics/collector.py@93d04878, observe_one_finished_request): cached is inside.
    (None, None) where the engine declares no prefix counters or the scrape lacks them."""
    r = resolve(c, sample)
    if r is None or r.prefix_cache is None:
        return None, None
    p = r.prefix_cache
    hits, queries = p.hits.total(sample), p.queries.total(sample)
    if queries is not None and hits is None:
        hits = 0.0  # a labelled counter appears at its first increment (SGLang's cached)
    if p.queries_exclude_hits and queries is not None:
        queries = queries + (hits or 0.0)
    return hits, queries


def prefix_hit_rate(c: EngineCounters, before: Sample, after: Sample) -> float | None:
    """Share of prompt tokens served from the prefix cache over the window, or None."""
    r = resolve(c, after)
    if r is None or r.prefix_cache is None:
        return None
    p = r.prefix_cache
    hits, queries = delta(p.hits, before, after), delta(p.queries, before, after)
    if hits is None or queries is None:
        return None
    denom = queries + hits if p.queries_exclude_hits else queries
    return hits / denom if denom > 0 else None
