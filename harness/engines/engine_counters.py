"""What each engine's /metrics exposes, declared once per engine kind (`ENGINE_COUNTERS`), and
which declaration an attached endpoint's scrape matches (`resolve`). Names, labels and
semantics come from each engine's source (docs/engine-metrics.md cites the files and
commits), not from its README."""

from __future__ import annotations

from harness.engines.counter_types import (
    AcceptanceGauge,
    EngineCounters,
    PrefixCacheCounters,
    ServerCacheCounters,
    SpecCounters,
    TokenCounters,
)
from harness.engines.prometheus import Sample
from harness.engines.series import Series


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
        # Older builds only (current ones removed the KV gauges): device hits are the cached
        # counter, read through prefix_cache.
        cache=ServerCacheCounters(kv_usage=(_s("llamacpp:kv_cache_usage_ratio"),)),
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
        # vllm/v1/metrics/loggers.py: prompt tokens by source (local_compute, local_cache_hit,
        # external_kv_transfer) and the KV usage gauge (a fraction despite `perc`), per
        # engine; read so by SemiAnalysisAI/InferenceX:infx/results/agentic/backends/vllm.py
        # @a30c9cb26d6d2a218ef87aadcaf854123ffcf71e (older builds: gpu_cache_usage_perc).
        cache=ServerCacheCounters(
            by_source=_s("vllm:prompt_tokens_by_source_total"), source_label="source",
            sources=(("local_cache_hit", "device"), ("external_kv_transfer", "external"),
                     ("local_compute", "computed")),
            kv_usage=(_s("vllm:kv_cache_usage_perc"), _s("vllm:gpu_cache_usage_perc")),
            host_usage=_s("vllm:cpu_kv_cache_usage_perc")),
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
        al_gauge=AcceptanceGauge("sglang:spec_accept_length", "interval-mean", 40,
                                 truncated_at_finish=True),
        # cached_tokens by cache_source (device = radix tree on the GPU, host = HiCache's host
        # tier, storage = its L3), token_usage and max_total_num_tokens per scheduler rank,
        # HiCache host tokens; as SemiAnalysisAI/InferenceX:infx/results/agentic/backends/
        # sglang.py@662c15e46d252adad2b8f05620268124a55971d0 reads them.
        cache=ServerCacheCounters(
            by_source=_s("sglang:cached_tokens_total"), source_label="cache_source",
            sources=(("device", "device"), ("host", "host"), ("storage", "external")),
            prompt=_s("sglang:prompt_tokens_total"),
            computed=_s("sglang:realtime_tokens_total", mode="prefill_compute"),
            hit_rate_gauge=_s("sglang:cache_hit_rate"), kv_usage=(_s("sglang:token_usage"),),
            host_tokens=(_s("sglang:hicache_host_used_tokens"),
                         _s("sglang:hicache_host_total_tokens")),
            pool_tokens=_s("sglang:max_total_num_tokens")),
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
        # KV-cache gauges of the iteration stats (SemiAnalysisAI/InferenceX:infx/results/
        # agentic/backends/trtllm.py@a30c9cb26d6d2a218ef87aadcaf854123ffcf71e); hits are the
        # cached-tokens counter (prefix_cache).
        cache=ServerCacheCounters(
            hit_rate_gauge=_s("trtllm_kv_cache_hit_rate"),
            kv_usage=(_s("trtllm_kv_cache_utilization"),),
            host_usage=_s("trtllm_kv_cache_host_utilization"),
            pool_blocks=(_s("trtllm_kv_cache_max_blocks"),
                         _s("trtllm_kv_cache_tokens_per_block"))),
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
        # Newer ATOM builds (not in the stored metrics.py): KV usage over dp ranks as one
        # series; hits are prefix_cache's counters.
        cache=ServerCacheCounters(kv_usage=(_s("atom:kv_cache_usage_ratio"),)),
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


