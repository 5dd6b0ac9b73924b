"""TensorRT-LLM: `trtllm-serve` with an extra-options YAML (speculative decoding, attention DP
and `enable_block_reuse: false` live there). Injected acceptance:
TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS = AL - 1 (it counts drafts only),
docs/methodology.md §5."""

from __future__ import annotations

from typing import Any

import yaml

from harness.engines.base import (
    CHECKS_ONLY,
    LAUNCH_SETTINGS,
    EngineAdapter,
    LaunchPlan,
    positive_int,
)
from harness.engines.counter_types import (
    AcceptanceGauge,
    EngineCounters,
    PrefixCacheCounters,
    ServerCacheCounters,
    SpecCounters,
    TokenCounters,
    series,
)

EXTRA_OPTIONS_FILE = "extra_llm_api_options.yaml"
# Per-request perf metrics and iteration stats feed /prometheus/metrics, where the speculative
# counters that verify a point's acceptance live (docs/engine-metrics.md).
METRICS_OPTIONS = {"return_perf_metrics": True, "enable_iter_perf_stats": True}


class TrtllmAdapter(EngineAdapter):
    kind = "trtllm"
    # What its /metrics exposes, read from its source (docs/engine-metrics.md)
    metrics = EngineCounters(
        kind="trtllm",
        source="NVIDIA/TensorRT-LLM:tensorrt_llm/metrics/collector.py@050f80de",
        metrics_path="/prometheus/metrics",
        tokens=TokenCounters(series("trtllm_prompt_tokens_total"),
                             series("trtllm_generation_tokens_total"),
                             series("trtllm_prompt_cached_tokens_total")),
        prefix_cache=PrefixCacheCounters(series("trtllm_prompt_cached_tokens_total"),
                                         series("trtllm_prompt_tokens_total")),
        # Per-position counters (per request, at finish): position 0 is drafted once per
        # verify step, so its count is the number of drafts.
        spec=SpecCounters(drafts=series("trtllm_spec_decode_drafted_tokens_total",
                                    token_position="0"),
                          accepted=series("trtllm_spec_decode_accepted_tokens_total"),
                          per_k=(series("trtllm_spec_decode_num_draft_tokens_total"),
                                 series("trtllm_spec_decode_num_accepted_tokens_total")),
                          counted_at="request-finish"),
        al_gauge=AcceptanceGauge("trtllm_spec_decode_acceptance_length", "last-iteration"),
        # KV-cache gauges of the iteration stats (SemiAnalysisAI/InferenceX:infx/results/
        # agentic/backends/trtllm.py@a30c9cb26d6d2a218ef87aadcaf854123ffcf71e); hits are the
        # cached-tokens counter (prefix_cache).
        cache=ServerCacheCounters(
            hit_rate_gauge=series("trtllm_kv_cache_hit_rate"),
            kv_usage=(series("trtllm_kv_cache_utilization"),),
            host_usage=series("trtllm_kv_cache_host_utilization"),
            pool_blocks=(series("trtllm_kv_cache_max_blocks"),
                         series("trtllm_kv_cache_tokens_per_block"))),
        launch_requirements=("return_perf_metrics: true", "enable_iter_perf_stats: true"),
    )
    # trtllm-serve runs from PATH: engine.python only where a template names {python}
    applies = frozenset({*CHECKS_ONLY, *LAUNCH_SETTINGS, "extra_options"} - {"python"})

    def extra_options(self, max_concurrency: int) -> dict[str, Any]:
        spec, t = self.sc.speculator, self.sc.topology
        opts: dict[str, Any] = {"enable_attention_dp": bool(t.dp_attention), **METRICS_OPTIONS}
        if not self.prefix_caching:
            opts["kv_cache_config"] = {"enable_block_reuse": False}
        if spec.method == "mtp":
            opts["speculative_config"] = {"decoding_type": "MTP",
                                          "num_nextn_predict_layers": spec.k}
        elif spec.method == "eagle3":
            opts["speculative_config"] = {"decoding_type": "Eagle", "max_draft_len": spec.k,
                                          "speculative_model_dir": spec.draft_model,
                                          "eagle3_one_model": True}
        elif spec.method == "ngram":
            opts["speculative_config"] = {"decoding_type": "NGram", "max_draft_len": spec.k,
                                          "max_matching_ngram_size": spec.ngram_max}
        elif spec.method == "draft_model":
            opts["speculative_config"] = {"decoding_type": "DraftTarget",
                                          "max_draft_len": spec.k,
                                          "speculative_model_dir": spec.draft_model}
        return opts

    def options(self, max_concurrency: int) -> dict[str, Any]:
        """The extra-options YAML: an upstream script's as it is (engine.extra_options) plus
        what /prometheus/metrics needs, else the adapter's own with the recipe's over it."""
        from harness.config.launches import merge_options
        from harness.engines.kv_offload import trtllm_offload

        if self.sc.engine.argv_template:
            return {**self.sc.engine.extra_options, **METRICS_OPTIONS}
        own = merge_options(self.extra_options(max_concurrency),
                            trtllm_offload(self.sc.engine.kv_offload))
        return {**own, **self.sc.engine.extra_options}

    @property
    def stream_interval(self) -> int:
        """`stream_interval:` of the extra-options YAML (TensorRT-LLM's LLM API option; its
        default is 1)."""
        return positive_int(self.options(1).get("stream_interval"),
                            "engine.extra_options", "stream_interval")

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        argv = self.templated_argv(port, max_concurrency, EXTRA_OPTIONS_FILE)
        if argv is None:
            argv = self.own_argv(port, max_concurrency)
        opts = self.options(max_concurrency)
        env = dict(self.sc.engine.env)
        if self.acceptance.mode == "injected" and self.acceptance.length is not None:
            env["TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"] = f"{self.acceptance.length - 1:g}"
        files = {EXTRA_OPTIONS_FILE: yaml.safe_dump(opts, sort_keys=True)}
        return self.containerize(LaunchPlan(argv=argv, env=env, files=files, port=port))

    def own_argv(self, port: int, max_concurrency: int) -> list[str]:
        t = self.sc.topology
        argv = ["trtllm-serve", self.checkpoint, "--host", self.sc.engine.host,
                "--port", str(port), "--backend", "pytorch", "--tp_size", str(t.tp),
                "--ep_size", str(t.ep), "--pp_size", str(t.pp),
                "--max_seq_len", str(self.context_per_request()),
                "--max_batch_size", str(self.max_running(max_concurrency)),
                "--extra_llm_api_options", EXTRA_OPTIONS_FILE]
        return argv + list(self.sc.engine.extra_args)
