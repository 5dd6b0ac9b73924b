"""The core families: latency statistics, interactivity, throughput, cost, counts, the
speculative and client figures every point carries (docs/methodology.md §3)."""

from __future__ import annotations

from harness.record.catalogue.base import (
    E2E_INTVTY_PERCENTILES,
    HIGHER,
    INTVTY_STATS,
    LOWER,
    NEUTRAL,
    PRICE_TIERS,
    STATS,
    Metric,
)
from harness.record.catalogue.base import m as _m

_LATENCY_DEFS = {
    "ttft": ("TTFT", "first chunk carrying content, reasoning or a tool call, minus send time"),
    "tpot": ("TPOT", "(E2EL - TTFT) / (output_tokens - 1), output tokens from usage; what "
                     "AIPerf and AgentX call ITL (their p90_itl is our p90_tpot)"),
    "itl": ("ITL per chunk", "gaps between content chunks: per chunk, not per token (a chunk "
                             "may carry several tokens); not AgentX's ITL, which is our TPOT"),
    "e2el": ("E2E latency", "last content chunk minus send time"),
}
_STAT_LABEL = {"mean": "mean", "median": "median", "std": "std", "p99.9": "p99.9"}


def _stat_label(s: str) -> str:
    return _STAT_LABEL.get(s, s)


def _families() -> list[Metric]:
    out: list[Metric] = []
    for lat, (name, definition) in _LATENCY_DEFS.items():
        for s in STATS:
            out.append(Metric(f"{s}_{lat}", f"{name}, {_stat_label(s)}", "s",
                              NEUTRAL if s == "std" else LOWER,
                              f"{_stat_label(s)} over measured requests of: {definition}",
                              "latency", 1000.0, "ms"))
    for s in INTVTY_STATS:
        out.append(Metric(f"{s}_intvty", f"Interactivity, {_stat_label(s)} TPOT", "tok/s/user",
                          HIGHER, f"1 / {s}_tpot (never a percentile of per-request rates)",
                          "interactivity"))
    for p in E2E_INTVTY_PERCENTILES:
        s = "median" if p == 50 else f"p{p}"
        out.append(Metric(f"{s}_e2e_intvty", f"E2E-normalized interactivity P{p}",
                          "tok/s/user", HIGHER,
                          f"1 / P{p} over requests of E2EL / output tokens (AgentX's x axis)",
                          "interactivity"))
    for tier in PRICE_TIERS:
        t = tier.replace("_", " ")
        out += [
            Metric(f"cost_per_mtok_{tier}", f"$ per million tokens ({t})", "$/Mtok", LOWER,
                   "$/GPU-hour / (tput_per_gpu x 3600 / 1e6)", "cost"),
            Metric(f"cost_per_mtok_out_{tier}", f"$ per million output tokens ({t})",
                   "$/Mtok", LOWER, "$/GPU-hour / (output_tput_per_gpu x 3600 / 1e6)", "cost"),
            Metric(f"tok_per_dollar_{tier}", f"Tokens per $ ({t})", "tok/$", HIGHER,
                   "tput_per_gpu x 3600 / $/GPU-hour", "cost"),
        ]
    return out


_SINGLES = [
    _m("tput_per_gpu", "Throughput per GPU, total", "tok/s/GPU", HIGHER,
       "(input + output tokens) / measured duration / GPUs", "throughput"),
    _m("output_tput_per_gpu", "Throughput per GPU, output", "tok/s/GPU", HIGHER,
       "output tokens / duration / GPUs (decode GPUs when disaggregated)", "throughput"),
    _m("input_tput_per_gpu", "Throughput per GPU, input", "tok/s/GPU", HIGHER,
       "input tokens / duration / GPUs (prefill GPUs when disaggregated)", "throughput"),
    _m("total_tput", "Throughput, total", "tok/s", HIGHER, "(input + output) / duration",
       "throughput"),
    _m("input_tput", "Throughput, input", "tok/s", HIGHER, "input tokens / duration",
       "throughput"),
    _m("output_tput", "Throughput, output", "tok/s", HIGHER, "output tokens / duration",
       "throughput"),
    _m("request_tput", "Requests per second", "req/s", HIGHER,
       "completed requests / duration", "throughput"),
    _m("qps", "QPS", "req/s", HIGHER, "agentic: completed requests / duration", "throughput"),
    _m("tok_s_per_mw", "Tokens/s per MW (all-in power)", "tok/s/MW", HIGHER,
       "tput_per_gpu x 1000 / all-in kW per GPU", "cost"),
    _m("j_per_tok", "Joules per token (all-in power)", "J/tok", LOWER,
       "all-in W per GPU / tput_per_gpu", "cost"),
    _m("stream_interval", "Stream interval", "tokens/chunk", NEUTRAL,
       "the engine's stream interval: a chunk carries up to this many tokens, so ITL (per "
       "chunk) is not per token when it is above 1", "counts"),
    _m("duration_s", "Measured duration", "s", NEUTRAL,
       "first send to the end of the measured window", "counts"),
    _m("theoretical_hit_rate", "Prefix-cache hit rate, theoretical", "ratio", NEUTRAL,
       "an infinite prefix cache over the blocks sent, in send order", "agentic"),
    _m("server_hit_rate", "Prefix-cache hit rate, server (usage)", "ratio", NEUTRAL,
       "cached_tokens / prompt_tokens from the server's usage", "agentic"),
    _m("server_metrics_hit_rate", "Prefix-cache hit rate, server (/metrics)", "ratio",
       NEUTRAL, "prefix-cache hit counters over the window, from /metrics", "agentic"),
    _m("spec_realised_al", "Acceptance length, realised", "tok/step", NEUTRAL,
       "1 + accepted draft tokens / drafts, from the engine's counters", "speculative"),
    _m("spec_al_error", "Acceptance length error", "ratio", NEUTRAL,
       "realised / requested AL - 1 (injected points; against the AL the metric reads "
       "when it cuts each request's last step, spec_expected_al, where that is lower)",
       "speculative"),
    _m("send_lag_p99_ms", "Send lag p99 (open loop)", "ms", NEUTRAL,
       "how late the client sent a request after its scheduled time, p99", "client"),
    _m("send_lag_max_ms", "Send lag max (open loop)", "ms", NEUTRAL,
       "how late the client sent a request after its scheduled time, worst", "client"),
    _m("client_stamp_err_p99_ms", "Client stamp error p99 (bound)", "ms", NEUTRAL,
       "a bound on the client's p99 timestamp error: the stamp probe's wait plus the wait "
       "behind a loop pass (docs/client.md), or the timer's estimate if larger", "client"),
    _m("client_stamp_probe_p99_ms", "Client stamp probe p99", "ms", NEUTRAL,
       "measured delay, arrival to stamp, of stamps another process sent at random instants, "
       "p99", "client"),
    _m("client_pass_offset_p99_ms", "Client loop-pass offset p99", "ms", NEUTRAL,
       "how long a read waited behind the earlier reads of its event-loop pass, p99", "client"),
    _m("client_lag_p99_ms", "Client loop lag p99", "ms", NEUTRAL,
       "how late a 5 ms timer fired, p99", "client"),
    _m("client_lag_max_ms", "Client loop lag max", "ms", NEUTRAL,
       "how late a 5 ms timer fired, worst", "client"),
    _m("client_cpu_share", "Client CPU share", "cores", NEUTRAL,
       "client process CPU seconds / wall seconds", "client"),
    _m("client_inflight_mean", "Requests in flight (mean)", "requests", NEUTRAL,
       "time-weighted mean of requests in flight", "client"),
]
_COUNTS = {
    "num_requests": "measured requests", "num_completed": "requests with timing",
    "num_failed": "requests that failed or were truncated",
    "num_truncated": "streams that ended without their terminator",
    "num_prompt_mismatch": "requests whose server prompt count differs from the built one",
    "num_usage_missing": "requests without usage in the stream",
    "num_short_output": "requests that stopped before max_tokens",
    "num_long_output": "requests that returned more tokens than max_tokens",
    "num_context_overflow": "agentic: requests refused for exceeding the context",
    "total_input_tokens": "input tokens of completed requests",
    "total_output_tokens": "output tokens of completed requests",
    "cached_prompt_tokens": "prompt tokens the server reported as cached",
    "server_prompt_tokens": "prompt tokens by the server's /metrics counters",
    "server_generation_tokens": "generated tokens by the server's /metrics counters",
    "server_cached_tokens": "prompt tokens served from the prefix cache, by /metrics",
    "spec_drafts": "draft steps by the engine's counters",
    "spec_independent_draws": "independent accepted-count draws behind the realised AL",
    "spec_draft_tokens": "draft tokens proposed by the engine's counters",
    "spec_accepted_tokens": "draft tokens accepted by the engine's counters",
    "sessions_started": "agentic: session trees started",
    "sessions_finished": "agentic: session trees replayed to their end",
}


METRICS: list[Metric] = [
    *_families(), *_SINGLES,
    *(_m(k, k.replace("_", " "), "count", NEUTRAL, d, "counts") for k, d in _COUNTS.items()),
]
