"""AgentX's aggregate figures under our names (harness/workloads/agentx_facts.py,
harness/engines/server_cache.py): AgentX's extra statistics, QPS over 1 s windows, request
accounting, server cache hit rates by source, KV usage, stability windows and trajectory
coverage; and `AGENTX_NAMES`, which of our keys is which field of InferenceX's agentic result
(docs/upstream/agentx.md §2.2-2.3a; what differs: docs/agentx-metrics.md).

The one name that collides: AgentX's `itl` (and `p90_itl`) is AIPerf's `inter_token_latency`,
a per-request mean, (E2EL - TTFT) / (OSL - 1): our TPOT (`p90_tpot`). Our `*_itl` is the gap
between consecutive content chunks, per chunk. AgentX's `intvty` is 1 / its ITL statistic:
our `*_intvty`. AgentX's `e2e_norm_intvty` is our `*_e2e_intvty`.
"""

from __future__ import annotations

from harness.record.catalogue.base import HIGHER, NEUTRAL, Metric
from harness.record.catalogue.base import m as _m

_AGENTX_STATS = ("mean", "median", "p75", "p90", "p95", "std")
_STAT_PATH = {"median": "p50"}

_SINGLES = [
    _m("mean_e2e_intvty", "E2E-normalized interactivity, mean", "tok/s/user", HIGHER,
       "1 / mean over requests of E2EL / output tokens (AgentX e2e_norm_intvty.mean)",
       "interactivity"),
    _m("std_e2e_intvty", "E2E-normalized interactivity, std of per-request rates",
       "tok/s/user", NEUTRAL,
       "population std over requests of output tokens / E2EL (AgentX e2e_norm_intvty.std)",
       "interactivity"),
    _m("std_request_intvty", "Interactivity, std of per-request rates", "tok/s/user", NEUTRAL,
       "population std over requests of 1 / TPOT (AgentX intvty.std); *_intvty are 1 / a "
       "TPOT statistic", "interactivity"),
    _m("qps_1s_windows", "QPS windows", "count", NEUTRAL,
       "full 1 s windows from the first request end to the last (AgentX qps.samples)",
       "agentic"),
    _m("acct_records_total", "Records, total", "count", NEUTRAL,
       "every request of the point: warmup turns, one-token probes and measured "
       "(AgentX request_accounting.records_total)", "accounting"),
    _m("acct_records_profiled", "Records, kept", "count", NEUTRAL,
       "measured requests with timing: what AgentX's statistics are over", "accounting"),
    _m("acct_dropped_total", "Records dropped", "count", NEUTRAL,
       "warmup or failed records (each once)", "accounting"),
    _m("acct_warmup_dropped", "Records dropped as warmup", "count", NEUTRAL,
       "warmup turns and probes", "accounting"),
    _m("acct_error_dropped", "Records dropped as errors", "count", NEUTRAL,
       "records without timing (failed, truncated, empty), warmup ones included",
       "accounting"),
    _m("acct_error_categories", "Errors by category", "counts", NEUTRAL,
       "error type -> records (the `type` of the exported AIPerf error object)", "accounting"),
    _m("stab_window_s", "Stability window", "s", NEUTRAL, "AgentX's fixed window (600 s)",
       "stability"),
    _m("stab_expected_windows", "Stability windows expected", "count", NEUTRAL,
       "whole windows the measured duration holds", "stability"),
    _m("stab_observed_windows", "Stability windows observed", "count", NEUTRAL,
       "windows, from the first issue, holding at least one kept request", "stability"),
    _m("stab_min_window_requests", "Fewest requests in a window", "count", NEUTRAL,
       "kept requests in the emptiest observed window", "stability"),
    _m("stab_ranges", "Per-window ranges", "s, tok/s/user", NEUTRAL,
       "{ttft,e2el,intvty}.{p75,p90}: {min, max} over windows of the window's TTFT, E2EL "
       "percentile and 1 / TPOT percentile; only with 2 windows or more", "stability"),
    _m("traj_root_count", "Root trajectories", "count", NEUTRAL,
       "distinct source traces among kept requests", "stability"),
    _m("traj_kish_effective", "Root trajectories, Kish effective", "count", NEUTRAL,
       "n^2 / sum of squared requests per trace", "stability"),
    _m("traj_largest_share", "Largest trajectory share", "ratio", NEUTRAL,
       "kept requests of the busiest trace / all kept requests", "stability"),
    _m("server_hit_rate_overall", "Prefix-cache hit rate, server, all tiers", "ratio",
       NEUTRAL, "prompt tokens from any cache tier / prompt tokens, by /metrics", "server cache"),
    _m("server_kv_usage_max", "KV-cache usage, max", "ratio", NEUTRAL,
       "GPU KV-cache usage gauge, max over ranks and 1 s samples in the window",
       "server cache"),
    _m("server_kv_usage_mean", "KV-cache usage, mean", "ratio", NEUTRAL,
       "GPU KV-cache usage gauge, mean over every (sample, rank) reading", "server cache"),
    _m("server_host_kv_usage_max", "Host KV-cache usage, max", "ratio", NEUTRAL,
       "host (CPU) KV tier usage, max over samples", "server cache"),
    _m("server_kv_pool_tokens", "KV pool size", "tokens", NEUTRAL,
       "KV-cache capacity in tokens, summed over ranks", "server cache"),
]
_SOURCES = {"device": "the GPU's prefix cache", "host": "the host (CPU) tier",
            "external": "another tier or a KV transfer (vLLM external_kv_transfer, SGLang "
                        "storage)", "computed": "computed, not cached"}
_STAT_FAMILIES = {
    "qps_1s": ("QPS over 1 s windows", "req/s", "requests ended per full 1 s window"),
    "input_tokens": ("Input tokens per request", "tokens", "prompt tokens per kept request"),
    "output_tokens": ("Output tokens per request", "tokens", "output tokens per kept request"),
    "expected_output_tokens": ("Expected output tokens per request", "tokens",
                               "the trace's recorded output length per kept request"),
}


def _families() -> list[Metric]:
    out: list[Metric] = []
    for fam, (label, unit, definition) in _STAT_FAMILIES.items():
        for s in _AGENTX_STATS:
            out.append(_m(f"{s}_{fam}", f"{label}, {s}", unit, NEUTRAL,
                          f"{s} of {definition}", "agentic"))
    for src, what in _SOURCES.items():
        out.append(_m(f"server_prompt_tokens_{src}", f"Prompt tokens from {src}", "tokens",
                      NEUTRAL, f"prompt tokens served by {what}, by /metrics", "server cache"))
        if src != "computed":
            out.append(_m(f"server_hit_rate_{src}", f"Prefix-cache hit rate, server, {src}",
                          "ratio", NEUTRAL, f"prompt tokens from {what} / prompt tokens",
                          "server cache"))
    return out


METRICS: list[Metric] = [*_SINGLES, *_families()]


def _agentx_names() -> dict[str, str]:
    """Our key -> the field of InferenceX's agentic result (process_agentic_result.py) that
    holds the same figure. AgentX's itl/tpot map to our tpot (see the module docstring)."""
    rm, sm = "request_metrics", "server_metrics"
    out: dict[str, str] = {}
    for s in _AGENTX_STATS:
        up = _STAT_PATH.get(s, s)
        out[f"{s}_ttft"] = f"{rm}.latency.ttft.{up}"
        out[f"{s}_e2el"] = f"{rm}.latency.e2el.{up}"
        out[f"{s}_tpot"] = f"{rm}.latency.itl.{up} (= latency.tpot.{up})"
        out[f"{s}_qps_1s"] = f"{rm}.qps.{up}"
        out[f"{s}_input_tokens"] = f"{rm}.tokens.input.{up}"
        out[f"{s}_output_tokens"] = f"{rm}.tokens.output_actual.{up}"
        out[f"{s}_expected_output_tokens"] = f"{rm}.tokens.output_expected.{up}"
        if s != "std":
            out[f"{s}_intvty"] = f"{rm}.latency.intvty.{up}"
            out[f"{s}_e2e_intvty"] = f"{rm}.latency.e2e_norm_intvty.{up}"
    out |= {"std_request_intvty": f"{rm}.latency.intvty.std",
            "std_e2e_intvty": f"{rm}.latency.e2e_norm_intvty.std",
            "qps_1s_windows": f"{rm}.qps.samples",
            "theoretical_hit_rate": f"{rm}.cache.theoretical_cache_hit_rate",
            "tput_per_gpu": f"{rm}.throughput.per_gpu.total_tput_tps",
            "output_tput_per_gpu": f"{rm}.throughput.per_gpu.output_tput_tps",
            "input_tput_per_gpu": f"{rm}.throughput.per_gpu.input_tput_tps",
            "total_tput": f"{rm}.throughput.total.tokens_per_second",
            "duration_s": f"{rm}.throughput.duration_seconds",
            "num_completed": "num_requests_successful",
            "acct_records_total": "request_accounting.records_total",
            "acct_records_profiled": "request_accounting.records_profiled",
            "acct_dropped_total": "request_accounting.records_dropped_total",
            "acct_warmup_dropped": "request_accounting.records_warmup_dropped",
            "acct_error_dropped": "request_accounting.records_error_dropped",
            "acct_error_categories": "request_accounting.error_categories",
            "server_hit_rate_device": f"{sm}.cache.gpu_cache_hit_rate",
            "server_hit_rate_host": f"{sm}.cache.cpu_cache_hit_rate",
            "server_hit_rate_external": f"{sm}.cache.external_cache_hit_rate",
            "server_hit_rate_overall": f"{sm}.cache.overall_cache_hit_rate",
            "server_prompt_tokens_device": f"{sm}.tokens.prompt_by_source.gpu_cache_hit",
            "server_prompt_tokens_computed": f"{sm}.tokens.prompt_by_source.computed",
            "server_prompt_tokens": f"{sm}.tokens.prompt_total",
            "server_generation_tokens": f"{sm}.tokens.generation_total",
            "server_kv_usage_max": f"{sm}.kv_cache.gpu_usage_pct",
            "server_host_kv_usage_max": f"{sm}.kv_cache.cpu_usage_pct",
            "server_kv_pool_tokens": "kv_cache_pool_tokens",
            "stab_window_s": f"{rm}.stability.window_seconds",
            "stab_expected_windows": f"{rm}.stability.expected_window_count",
            "stab_observed_windows": f"{rm}.stability.observed_window_count",
            "stab_min_window_requests": f"{rm}.stability.min_window_requests",
            "stab_ranges": f"{rm}.stability.observed_ranges",
            "traj_root_count": f"{rm}.stability.root_trajectory_count",
            "traj_kish_effective": f"{rm}.stability.root_trajectory_kish_effective_count",
            "traj_largest_share": f"{rm}.stability.root_trajectory_largest_share"}
    return out


# Our per-chunk `*_itl` has no AgentX counterpart (AgentX's `itl` is our `*_tpot`).
AGENTX_NAMES: dict[str, str] = _agentx_names()
