"""What the server says about its caches over a point, under engine-neutral names: prefix-cache
hit rates by source (device, host, external) and KV-cache usage, read through the series the
adapter declares (`EngineCounters.cache`, harness.engines.engine_counters), as InferenceX's
agentic aggregation reports them (docs/upstream/agentx.md §2.3). Pure.

Counters are deltas over the measured window (the scrapes at its start and end); gauges are
read in the samples taken inside the window (about one a second), or the end scrape when there
are none. A usage gauge is one value per reporting rank: its maximum is over ranks and samples
(InferenceX's `gpu_usage_pct` is the max), its mean over every (sample, rank) reading. The pool
size is per rank too, and each rank holds its own pool: those are summed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from harness.engines.counter_types import EngineCounters, ServerCacheCounters
from harness.engines.engine_counters import resolve
from harness.engines.prometheus import Sample
from harness.engines.sampler import Sampled
from harness.engines.series import Labels, Series, delta

SOURCES = ("device", "host", "external", "computed")


def normalize_fraction(v: float | None) -> float | None:
    """A gauge that may be a percentage, as a fraction (InferenceX's normalize_fraction:
    above 1.5 it is a percentage; SemiAnalysisAI/InferenceX:infx/results/agentic/common.py
    @a30c9cb26d6d2a218ef87aadcaf854123ffcf71e)."""
    if v is None:
        return None
    return v / 100.0 if v > 1.5 else v


def delta_by_label(s: Series, label: str, before: Sample, after: Sample) -> dict[str, float]:
    """A counter's increase over the window per value of `label`, summed over the other
    labels. A label set absent from a successful `before` scrape counted 0 (prometheus_client
    creates it at its first increment); one that went backwards (a restart) is left out."""
    def by_value(sample: Sample) -> dict[str, float]:
        out: dict[str, float] = {}
        for labels, v in s.by_labels(sample).items():
            key = dict(labels).get(label, "")
            out[key] = out.get(key, 0.0) + v
        return out

    if not before:
        return {}
    a, b = by_value(after), by_value(before)
    return {k: v - b.get(k, 0.0) for k, v in a.items() if v >= b.get(k, 0.0)}


def gauge_readings(s: Series, samples: Sequence[Sample]) -> list[dict[Labels, float]]:
    return [r for sample in samples if (r := s.by_labels(sample))]


def first_present(series: Iterable[Series], samples: Sequence[Sample]
                  ) -> list[dict[Labels, float]]:
    for s in series:
        if got := gauge_readings(s, samples):
            return got
    return []


def raw_max(readings: list[dict[Labels, float]]) -> float | None:
    vals = [v for r in readings for v in r.values() if v == v]
    return max(vals) if vals else None


def gauge_max(readings: list[dict[Labels, float]]) -> float | None:
    return normalize_fraction(raw_max(readings))


def gauge_mean(readings: list[dict[Labels, float]]) -> float | None:
    vals = [v for r in readings for v in r.values() if v == v]
    return normalize_fraction(sum(vals) / len(vals)) if vals else None


def pool_tokens(cc: ServerCacheCounters, samples: Sequence[Sample]) -> float | None:
    """KV pool size in tokens: per rank the largest reading, summed over ranks."""
    def per_rank_max(s: Series) -> dict[Labels, float]:
        out: dict[Labels, float] = {}
        for r in gauge_readings(s, samples):
            for labels, v in r.items():
                out[labels] = max(v, out.get(labels, v))
        return out

    if cc.pool_tokens is not None and (ranks := per_rank_max(cc.pool_tokens)):
        return sum(ranks.values())
    if cc.pool_blocks is not None:
        blocks, per_block = (per_rank_max(s) for s in cc.pool_blocks)
        if blocks and per_block:
            return sum(blocks.values()) * max(per_block.values())
    return None


def tokens_by_source(c: EngineCounters, cc: ServerCacheCounters, before: Sample,
                     after: Sample) -> tuple[dict[str, float], float | None]:
    """Prompt tokens of the window by our source names, and all prompt tokens."""
    got: dict[str, float] = {}
    if cc.by_source is not None:
        raw = delta_by_label(cc.by_source, cc.source_label, before, after)
        names = dict(cc.sources)
        for value, n in raw.items():
            ours = names.get(value, "external")  # a tier we do not know is not the GPU's
            got[ours] = got.get(ours, 0.0) + n
    if not got and c.prefix_cache is not None:  # no source split: the hit counter is device
        hits = delta(c.prefix_cache.hits, before, after)
        if hits is not None:
            got["device"] = hits
    if cc.computed is not None and (comp := delta(cc.computed, before, after)) is not None:
        got["computed"] = comp
    prompt = delta(cc.prompt, before, after) if cc.prompt is not None else None
    if prompt is None and cc.by_source is not None and got and cc.prompt is None:
        prompt = sum(got.values())  # vLLM: the sources partition the prompt tokens
    if prompt is None and c.prefix_cache is not None:
        queries = delta(c.prefix_cache.queries, before, after)
        if queries is not None:
            prompt = queries + (got.get("device", 0.0) if c.prefix_cache.queries_exclude_hits
                                else 0.0)
    return got, prompt


def hit_rates(by_source: dict[str, float], prompt: float | None) -> dict[str, float]:
    if not prompt or prompt <= 0 or not by_source:
        return {}
    out = {f"server_hit_rate_{s}": by_source[s] / prompt for s in ("device", "host",
                                                                     "external")
           if s in by_source}
    out["server_hit_rate_overall"] = sum(by_source.get(s, 0.0) for s in
                                         ("device", "host", "external")) / prompt
    return out


def server_cache_facts(c: EngineCounters, before: Sample, after: Sample,
                       samples: Sampled = ()) -> dict[str, Any]:
    """Hit rates by source and KV usage over the measured window; {} where the engine's
    metrics say nothing about them (keys with no value are left out)."""
    r = resolve(c, after)
    if r is None or r.cache is None:
        return {}
    cc = r.cache
    window = [s for _, s in samples] or ([after] if after else [])
    by_source, prompt = tokens_by_source(r, cc, before, after)
    out: dict[str, Any] = {f"server_prompt_tokens_{s}": by_source[s] for s in SOURCES
                           if s in by_source}
    out.update(hit_rates(by_source, prompt))
    if "server_hit_rate_device" not in out and cc.hit_rate_gauge is not None:
        out["server_hit_rate_device"] = gauge_mean(gauge_readings(cc.hit_rate_gauge, window))
    usage = first_present(cc.kv_usage, window)
    out["server_kv_usage_max"] = gauge_max(usage)
    out["server_kv_usage_mean"] = gauge_mean(usage)
    if cc.host_usage is not None:
        out["server_host_kv_usage_max"] = gauge_max(gauge_readings(cc.host_usage, window))
    if cc.host_tokens is not None and out.get("server_host_kv_usage_max") is None:
        used, total = (raw_max(gauge_readings(s, window)) for s in cc.host_tokens)
        if used is not None and total:
            out["server_host_kv_usage_max"] = used / total
    out["server_kv_pool_tokens"] = pool_tokens(cc, window)
    return {k: v for k, v in out.items() if v is not None}
