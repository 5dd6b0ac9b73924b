"""Every metric of a point: its formula beside its code, and the catalogue of what each emitted key
means (label, unit, display scale, which direction is better, definition). Gate, CLI choices,
dashboard axes, report columns and tables all read `CATALOGUE`; a new metric touches this file
only (docs/methodology.md §3, §6; docs/metrics.md is generated from the catalogue).

Pure functions of `RequestRecord`s. Units follow InferenceX's published rows: latencies in
seconds, throughput in tokens/s (per GPU where the key says so), interactivity in
tokens/s/user. Keys are InferenceX's (`median_ttft`, `p99_tpot`, `median_intvty`,
`tput_per_gpu`, ...) so their rows and ours share one table.

Names other tools use differently: AIPerf calls our TPOT "ITL"; guidellm's "TPOT" includes
TTFT; vLLM's sweep plot calls output throughput / concurrency "interactivity". Ours:
- TTFT  first chunk carrying content, reasoning or a tool call, minus send time.
- E2EL  last content-bearing chunk minus send time.
- TPOT  (E2EL - TTFT) / (output_tokens - 1), output_tokens from the server's `usage`.
- ITL   gaps between consecutive content chunks. A chunk may carry several tokens
        (speculative decoding, stream intervals), so ITL is per chunk, not per token.
- intvty (interactivity) = 1 / TPOT, per statistic: `p99_intvty = 1 / p99_tpot` (the slow tail).
        Never a percentile of per-request rates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.records import RequestRecord

# Statistic name -> percentile (None: not a percentile). p75/p95 are AgentX's (its aggregate
# reports mean/p50/p75/p90/p95/std); p99/p99.9 are InferenceX's.
STATS: dict[str, float | None] = {"mean": None, "median": 50, "std": None, "p75": 75,
                                  "p90": 90, "p95": 95, "p99": 99, "p99.9": 99.9}
LATENCIES = ("ttft", "tpot", "itl", "e2el")
# Interactivity is reported for every statistic except std (1/std is meaningless).
INTVTY_STATS = tuple(s for s in STATS if s != "std")
E2E_INTVTY_PERCENTILES = (50, 75, 90, 95)


@dataclass(frozen=True, slots=True)
class GpuCount:
    """GPUs a point occupies. Disaggregated serving splits prefill and decode pools."""

    total: int
    prefill: int = 0  # 0 = not disaggregated
    decode: int = 0

    @property
    def disaggregated(self) -> bool:
        return self.prefill > 0 and self.decode > 0


def summarize(values: Sequence[float] | np.ndarray, name: str) -> dict[str, float]:
    """mean, std (population, like vLLM) and every percentile of STATS (linear interpolation)."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {f"{s}_{name}": math.nan for s in STATS}
    pct = {s: q for s, q in STATS.items() if q is not None}
    qs = dict(zip(pct, np.percentile(a, list(pct.values())), strict=True))
    out = {f"{s}_{name}": float(v) for s, v in qs.items()}
    out[f"mean_{name}"] = float(a.mean())
    out[f"std_{name}"] = float(a.std())
    return {f"{s}_{name}": out[f"{s}_{name}"] for s in STATS}


def ttft(r: RequestRecord) -> float:
    """Time to first token: first content-bearing chunk minus send time."""
    return r.first_token_ts - r.send_ts


def e2el(r: RequestRecord) -> float:
    """End-to-end latency: last content-bearing chunk minus send time."""
    return r.last_token_ts - r.send_ts


def output_tokens(r: RequestRecord) -> int:
    """Output tokens as the server counted them (`usage.completion_tokens`).

    Without usage we count content chunks (or the server's per-chunk token ids), which
    undercounts multi-token chunks; such requests are reported in `num_usage_missing` so nobody
    mistakes the figure for exact.
    """
    if r.completion_tokens >= 0:
        return r.completion_tokens
    return sum(r.chunk_tokens) if r.chunk_tokens_exact else len(r.chunk_ts)


def input_tokens(r: RequestRecord) -> int:
    """Prompt tokens as the server counted them, else as the workload built them."""
    return r.prompt_tokens if r.prompt_tokens >= 0 else r.expected_prompt_tokens


def tpot(r: RequestRecord) -> float:
    """Time per output token after the first: (E2EL - TTFT) / (output_tokens - 1).

    Undefined (NaN) for requests with fewer than two output tokens, which vLLM also excludes.
    """
    n = output_tokens(r)
    if n < 2:
        return math.nan
    return (e2el(r) - ttft(r)) / (n - 1)


def itls(r: RequestRecord) -> np.ndarray:
    """Gaps between consecutive content chunks of one request (per chunk, not per token)."""
    return np.diff(np.asarray(r.chunk_ts, dtype=float))


def has_timing(r: RequestRecord) -> bool:
    return r.ok and not math.isnan(r.first_token_ts)


def point_metrics(
    records: Sequence[RequestRecord], duration_s: float, gpus: GpuCount
) -> dict[str, float | int]:
    """All metrics of one point from its measured requests (warmup already excluded).

    Failed and truncated requests count in `num_failed` and are left out of latencies and
    throughput; their tokens were not (fully) served.
    """
    done = [r for r in records if has_timing(r)]
    out: dict[str, float | int] = {
        "num_requests": len(records),
        "num_completed": len(done),
        "num_failed": len(records) - len(done),
        "num_truncated": sum(1 for r in records if r.truncated),
        "num_prompt_mismatch": sum(1 for r in done if r.prompt_mismatch),
        "num_usage_missing": sum(1 for r in done if r.completion_tokens < 0),
        "num_short_output": sum(1 for r in done if 0 <= r.completion_tokens < r.max_tokens),
        "num_long_output": sum(1 for r in done if output_tokens(r) > r.max_tokens > 0),
        "duration_s": duration_s,
    }
    ttfts = np.array([ttft(r) for r in done], dtype=float)
    e2els = np.array([e2el(r) for r in done], dtype=float)
    tpots = np.array([tpot(r) for r in done], dtype=float)
    tpots = tpots[~np.isnan(tpots)]
    gaps = np.concatenate([itls(r) for r in done]) if done else np.array([])
    out.update(summarize(ttfts, "ttft"))
    out.update(summarize(tpots, "tpot"))
    out.update(summarize(gaps, "itl"))
    out.update(summarize(e2els, "e2el"))
    # Interactivity (tok/s/user) = 1 / TPOT at the same statistic.
    for s in INTVTY_STATS:
        t = out[f"{s}_tpot"]
        out[f"{s}_intvty"] = 1.0 / t if t and t > 0 and not math.isnan(t) else math.nan
    out.update(e2e_normalized_interactivity(done))

    in_tok = sum(input_tokens(r) for r in done)
    out_tok = sum(output_tokens(r) for r in done)
    out["total_input_tokens"] = in_tok
    out["total_output_tokens"] = out_tok
    out["cached_prompt_tokens"] = sum(max(r.cached_tokens, 0) for r in done)
    out.update(throughput(in_tok, out_tok, len(done), duration_s, gpus))
    return out


def e2e_normalized_interactivity(done: Sequence[RequestRecord]) -> dict[str, float]:
    """AgentX's headline x axis: per request r = E2EL / OSL; `pXX_e2e_intvty` = 1 / pXX(r)."""
    ratios = np.array(
        [e2el(r) / output_tokens(r) for r in done if output_tokens(r) > 0], dtype=float
    )
    out: dict[str, float] = {}
    for p in E2E_INTVTY_PERCENTILES:
        key = "median_e2e_intvty" if p == 50 else f"p{p}_e2e_intvty"
        v = float(np.percentile(ratios, p)) if ratios.size else math.nan
        out[key] = 1.0 / v if v > 0 else math.nan
    return out


def throughput(
    in_tok: int, out_tok: int, n_done: int, duration_s: float, gpus: GpuCount
) -> dict[str, float]:
    """Tokens per second over the measured window, and per GPU (InferenceX process_result).

    Disaggregated: output per decode GPU, input per prefill GPU, total per all GPUs.
    """
    if duration_s <= 0:
        nan = math.nan
        return dict.fromkeys(
            ("input_tput", "output_tput", "total_tput", "request_tput", "tput_per_gpu",
             "input_tput_per_gpu", "output_tput_per_gpu"),
            nan,
        )
    inp, outp = in_tok / duration_s, out_tok / duration_s
    dec = gpus.decode if gpus.disaggregated else gpus.total
    pre = gpus.prefill if gpus.disaggregated else gpus.total
    return {
        "input_tput": inp,
        "output_tput": outp,
        "total_tput": inp + outp,
        "request_tput": n_done / duration_s,
        "tput_per_gpu": (inp + outp) / gpus.total,
        "input_tput_per_gpu": inp / pre,
        "output_tput_per_gpu": outp / dec,
    }


# ---- the catalogue ---------------------------------------------------------------------------
HIGHER, LOWER, NEUTRAL = "higher", "lower", "none"
PRICE_TIERS = ("hyperscaler", "neocloud", "rental_3yr")


@dataclass(frozen=True, slots=True)
class Metric:
    """What one emitted key means. `unit` is the stored unit; `scale` turns it into
    `display_unit` for people (seconds are stored, milliseconds shown)."""

    key: str
    label: str
    unit: str
    direction: str  # HIGHER or LOWER is better; NEUTRAL: not a performance figure
    definition: str
    group: str
    scale: float = 1.0
    display_unit: str = ""

    @property
    def higher_is_better(self) -> bool:
        return self.direction == HIGHER

    @property
    def shown_unit(self) -> str:
        return self.display_unit or self.unit


_LATENCY_DEFS = {
    "ttft": ("TTFT", "first chunk carrying content, reasoning or a tool call, minus send time"),
    "tpot": ("TPOT", "(E2EL - TTFT) / (output_tokens - 1), output tokens from usage"),
    "itl": ("ITL per chunk", "gaps between content chunks: per chunk, not per token (a chunk "
                             "may carry several tokens)"),
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


def _m(key: str, label: str, unit: str, direction: str, definition: str, group: str,
       scale: float = 1.0, display_unit: str = "") -> Metric:
    return Metric(key, label, unit, direction, definition, group, scale, display_unit)


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
       "realised / requested AL - 1 (injected points)", "speculative"),
    _m("send_lag_p99_ms", "Send lag p99 (timestamped replay)", "ms", NEUTRAL,
       "how late the client sent a request after its scheduled time, p99", "client"),
    _m("send_lag_max_ms", "Send lag max (timestamped replay)", "ms", NEUTRAL,
       "how late the client sent a request after its scheduled time, worst", "client"),
    _m("client_stamp_err_p99_ms", "Client stamp error p99 (estimate)", "ms", NEUTRAL,
       "the client's estimate of its own p99 timestamp error", "client"),
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

CATALOGUE: dict[str, Metric] = {m.key: m for m in [
    *_families(), *_SINGLES,
    *(_m(k, k.replace("_", " "), "count", NEUTRAL, d, "counts") for k, d in _COUNTS.items()),
]}


def metric(key: str) -> Metric:
    """The catalogue entry of `key`; a KeyError naming the closest keys otherwise."""
    try:
        return CATALOGUE[key]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(key, list(CATALOGUE), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise KeyError(f"unknown metric {key!r}{hint}") from None


def ranked_metrics(group: str | None = None) -> list[str]:
    """Keys with a better direction (what a gate, axis or frontier can use)."""
    return [k for k, m in CATALOGUE.items()
            if m.direction != NEUTRAL and (group is None or m.group == group)]


def catalogue_markdown() -> str:
    """docs/metrics.md: every emitted key, from the catalogue (a test keeps the file current)."""
    lines = ["# Metrics", "",
             "Generated from `harness/metrics.py` (`harness metrics` prints it). Stored units "
             "are what points.jsonl holds; tables and charts show the display unit.", ""]
    groups: dict[str, list[Metric]] = {}
    for m in CATALOGUE.values():
        groups.setdefault(m.group, []).append(m)
    for group, ms in groups.items():
        lines += [f"## {group}", "", "| key | label | unit (shown) | better | definition |",
                  "|---|---|---|---|---|"]
        for m in ms:
            shown = m.unit + (f" ({m.display_unit})" if m.display_unit else "")
            lines.append(f"| `{m.key}` | {m.label} | {shown} | {m.direction} | "
                         f"{m.definition} |")
        lines.append("")
    return "\n".join(lines)
