"""SGLang: `python -m sglang.launch_server`. Injected acceptance through its own environment
knobs: SGLANG_SIMULATE_ACC_LEN with the `match-expected` method (exact mean) and
`real-draft-token` mode (streaming stays intact), docs/methodology.md §5."""

from __future__ import annotations

from harness.engines.base import EngineAdapter, LaunchPlan
from harness.engines.counter_types import (
    AcceptanceGauge,
    EngineCounters,
    PrefixCacheCounters,
    ServerCacheCounters,
    SpecCounters,
    TokenCounters,
    series,
)
from harness.engines.kv_offload import add_offload
from harness.engines.profiler import ProfilerEndpoints
from harness.engines.template import has_flag

SGLANG_ALGORITHMS = {"mtp": "EAGLE", "eagle": "EAGLE", "eagle3": "EAGLE3", "ngram": "NGRAM",
                     "draft_model": "STANDALONE"}


class SglangAdapter(EngineAdapter):
    kind = "sglang"
    profiler = ProfilerEndpoints("/start_profile", "/stop_profile", "SGLANG_TORCH_PROFILER_DIR",
                                 dir_in_body=True)
    cache_reset = "/flush_cache"
    # What its /metrics exposes, read from its source (docs/engine-metrics.md)
    metrics = EngineCounters(
        kind="sglang",
        source=("sgl-project/sglang:python/sglang/srt/managers/scheduler_metrics_mixin.py"
                "@01bb3c80; python/sglang/srt/observability/metrics_collector.py@016d8605"),
        tokens=TokenCounters(series("sglang:prompt_tokens_total"),
                             series("sglang:generation_tokens_total"),
                             series("sglang:cached_tokens_total")),
        prefix_cache=PrefixCacheCounters(series("sglang:cached_tokens_total"),
                                         series("sglang:prompt_tokens_total")),
        # Newer SGLang only; counted when a request finishes, tokenizer-side (no dp_rank).
        spec=SpecCounters(drafts=series("sglang:spec_verify_calls_total"),
                          generation=series("sglang:generation_tokens_total"),
                          requests=series("sglang:num_requests_total"),
                          counted_at="request-finish", truncated_at_finish=True),
        al_gauge=AcceptanceGauge("sglang:spec_accept_length", "interval-mean", 40,
                                 truncated_at_finish=True),
        # cached_tokens by cache_source (device = radix tree on the GPU, host = HiCache's host
        # tier, storage = its L3), token_usage and max_total_num_tokens per scheduler rank,
        # HiCache host tokens; as SemiAnalysisAI/InferenceX:infx/results/agentic/backends/
        # sglang.py@662c15e46d252adad2b8f05620268124a55971d0 reads them.
        cache=ServerCacheCounters(
            by_source=series("sglang:cached_tokens_total"), source_label="cache_source",
            sources=(("device", "device"), ("host", "host"), ("storage", "external")),
            prompt=series("sglang:prompt_tokens_total"),
            computed=series("sglang:realtime_tokens_total", mode="prefill_compute"),
            hit_rate_gauge=series("sglang:cache_hit_rate"),
            kv_usage=(series("sglang:token_usage"),),
            host_tokens=(series("sglang:hicache_host_used_tokens"),
                         series("sglang:hicache_host_total_tokens")),
            pool_tokens=series("sglang:max_total_num_tokens")),
        injection_draw="batch",
        launch_requirements=("--enable-metrics",),
    )

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        argv = self.templated_argv(port, max_concurrency)
        if argv is None:
            argv = self.own_argv(port, max_concurrency)
        elif not has_flag(argv, "--enable-metrics"):
            argv.append("--enable-metrics")  # what verifies a point's acceptance
        env = dict(self.sc.engine.env)
        if not self.sc.engine.argv_template:  # an upstream command carries its own
            argv, env = add_offload(self.kind, self.sc.engine.kv_offload, argv, env)
        if self.acceptance.mode == "injected":
            env.update({
                "SGLANG_SIMULATE_ACC_LEN": f"{self.acceptance.length:g}",
                "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
            })
        return self.containerize(LaunchPlan(argv=argv, env=env, port=port))

    def own_argv(self, port: int, max_concurrency: int) -> list[str]:
        t, spec = self.sc.topology, self.sc.speculator
        argv = [self.python(), "-m", "sglang.launch_server",
                "--model-path", self.checkpoint, "--served-model-name", self.served_model_name,
                "--host", self.sc.engine.host, "--port", str(port), "--tp", str(t.tp),
                # off by default; its counters and accept-length gauge are how a point's
                # realised acceptance is verified (docs/engine-metrics.md)
                "--enable-metrics"]
        if t.ep > 1:
            argv += ["--ep", str(t.ep)]
        if t.dp_attention:
            argv += ["--enable-dp-attention", "--dp", str(t.tp)]
        if t.pp > 1:
            argv += ["--pp-size", str(t.pp)]
        if spec.method != "none":
            argv += ["--speculative-algorithm", SGLANG_ALGORITHMS.get(spec.method, spec.method),
                     "--speculative-num-steps", str(spec.k),
                     "--speculative-eagle-topk", "1",
                     "--speculative-num-draft-tokens", str(spec.k + 1)]
            if spec.draft_model:
                argv += ["--speculative-draft-model-path", spec.draft_model]
        if not self.prefix_caching:
            argv += ["--disable-radix-cache"]
        argv += ["--context-length", str(self.context_per_request()),
                 "--max-running-requests", str(self.max_running(max_concurrency))]
        return argv + list(self.sc.engine.extra_args)
