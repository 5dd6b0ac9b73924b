"""ATOM (AMD, ROCm): `python -m atom.entrypoints.openai_server`, flags as InferenceX's scripts
pass them (`--server-port`, `-tp`; docs/upstream/inferencex.md §2.4). Prefix caching is on only
where the workload wants it (`--enable-prefix-caching`, as the agentic script adds). Injected
acceptance: `--spec-decode-acceptance-length AL` (docs/methodology.md §5)."""

from __future__ import annotations

from harness.engines.base import CHECKS_ONLY, LAUNCH_SETTINGS, EngineAdapter, LaunchPlan
from harness.engines.counter_types import (
    AcceptanceGauge,
    EngineCounters,
    PrefixCacheCounters,
    ServerCacheCounters,
    SpecCounters,
    TokenCounters,
    series,
)
from harness.engines.profiler import ProfilerEndpoints
from harness.engines.template import has_flag


class AtomAdapter(EngineAdapter):
    kind = "atom"
    profiler = ProfilerEndpoints("/start_profile", "/stop_profile", "ATOM_TORCH_PROFILER_DIR")
    # What its /metrics exposes, read from its source (docs/engine-metrics.md)
    metrics = EngineCounters(
        kind="atom",
        source="ROCm/ATOM:atom/entrypoints/openai/metrics.py@1b2be632",
        tokens=TokenCounters(series("atom:prompt_tokens_total"),
                             series("atom:generation_tokens_total")),
        prefix_cache=PrefixCacheCounters(series("atom:prefix_cache_cached_tokens_total"),
                                         series("atom:prefix_cache_full_tokens_total")),
        # Decode steps by accepted count, summed over the accepted_tokens label = drafts.
        spec=SpecCounters(drafts=series("atom:mtp_decode_steps_total"),
                          accepted=series("atom:mtp_accepted_tokens_total"),
                          draft_tokens=series("atom:mtp_draft_tokens_total")),
        al_gauge=AcceptanceGauge("atom:mtp_average_tokens_per_forward", "lifetime"),
        # Newer ATOM builds (not in the stored metrics.py): KV usage over dp ranks as one
        # series; hits are prefix_cache's counters.
        cache=ServerCacheCounters(kv_usage=(series("atom:kv_cache_usage_ratio"),)),
    )
    # its own command takes no address flag: engine.host only where a template names {host}
    applies = frozenset({*CHECKS_ONLY, *LAUNCH_SETTINGS} - {"host"})

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        argv = self.templated_argv(port, max_concurrency) or self.own_argv(port)
        # the rate spelling is the same knob, mutually exclusive with the length
        # (agentic/glm5.2_fp4_mi355x_atom_mtp.sh@843c6254 passes the rate)
        if self.acceptance.mode == "injected" and not any(has_flag(argv, f) for f in (
                "--spec-decode-acceptance-length", "--spec-decode-acceptance-rate")):
            argv += ["--spec-decode-acceptance-length", f"{self.acceptance.length:g}"]
        return self.containerize(LaunchPlan(argv=argv, env=dict(self.sc.engine.env), port=port))

    def own_argv(self, port: int) -> list[str]:
        t, spec = self.sc.topology, self.sc.speculator
        argv = [self.python(), "-m", "atom.entrypoints.openai_server", "--model", self.checkpoint,
                "--server-port", str(port), "-tp", str(t.tp)]
        if t.dp_attention:
            argv += ["--enable-dp-attention"]
        if t.ep > 1 or t.dp_attention:
            argv += ["--enable-expert-parallel"]
        if self.prefix_caching:
            argv += ["--enable-prefix-caching"]
        if spec.method != "none":
            argv += ["--method", spec.method, "--num-speculative-tokens", str(spec.k)]
            if spec.draft_model:  # eagle3's drafter, or DSpark's when separate (Kimi-K3)
                argv += ["--draft-model", spec.draft_model]
        argv += ["--max-model-len", str(self.context_per_request())]
        return argv + list(self.sc.engine.extra_args)
