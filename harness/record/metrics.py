"""Every metric of a point: its formula beside its code (docs/methodology.md §3, §6). What each
emitted key means lives in `harness.record.catalogue` (re-exported here); a new metric is a
formula here and one entry in its family's catalogue module (docs/metrics.md is generated from it).

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

from harness.record.catalogue import (  # noqa: F401 - re-exported: callers read the catalogue here too
    CATALOGUE,
    E2E_INTVTY_PERCENTILES,
    HIGHER,
    INTVTY_STATS,
    LATENCIES,
    LOWER,
    NEUTRAL,
    PRICE_TIERS,
    STATS,
    Metric,
    catalogue_markdown,
    metric,
    ranked_metrics,
)
from harness.records import RequestRecord


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


# A percentile q is held by a sample of n when at least MIN_TAIL of its values lie beyond it:
# n >= MIN_TAIL / (1 - q). Below that the "percentile" is an interpolation towards the sample's
# maximum, not an estimate of q (a p99.9 of 10 requests is their largest, give or take).
MIN_TAIL = 1


def needed_for(q: float, min_tail: int = MIN_TAIL) -> int:
    """The smallest sample that holds percentile `q` (0-100): p50 2, p90 10, p99 100,
    p99.9 1000."""
    return math.ceil(min_tail / (1.0 - q / 100.0) - 1e-9)


def unheld_stats(n: int, min_tail: int = MIN_TAIL) -> dict[str, int]:
    """STATS percentiles a sample of `n` does not hold, each with the sample it needs."""
    return {s: k for s, q in STATS.items() if q is not None
            and n < (k := needed_for(q, min_tail))}


def sample_support(sizes: dict[str, int], min_tail: int = MIN_TAIL) -> dict[str, object]:
    """Per latency family (its sample size), the percentiles reported beyond what the sample
    holds, as `stats_unheld` ({"ttft": {"p99": 100, "p99.9": 1000}}: needs 100 and 1000
    values; empty when every percentile is held) and `stats_sample` (the sizes)."""
    unheld = {fam: u for fam, n in sizes.items() if (u := unheld_stats(n, min_tail))}
    return {"stats_sample": dict(sizes), "stats_unheld": unheld}


def unheld_text(unheld: dict[str, dict[str, int]], sizes: dict[str, int]) -> list[str]:
    """What each family's sample is missing, for people ("ttft p99 needs >= 100 values, has
    10")."""
    return [f"{fam} {s} needs >= {k} values, has {sizes.get(fam, 0)}"
            for fam, by in unheld.items() for s, k in by.items()]


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
    records: Sequence[RequestRecord], duration_s: float, gpus: GpuCount,
    drop_zero_tpot: bool = False,
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
    # A TPOT of 0 (every content chunk in one read: no decode time observed) is no rate.
    # AgentX drops ITL <= 0 (docs/upstream/agentx.md §2.3a) and the AIPerf export writes no
    # ITL for it (aiperf_records.record_metrics), so agentic points drop it and 1/pXX TPOT is
    # upstream's intvty; fixed-sequence points keep it, as vLLM's benchmark_serving does.
    tpots = tpots[~np.isnan(tpots) & ((tpots > 0) if drop_zero_tpot else True)]
    gaps = np.concatenate([itls(r) for r in done]) if done else np.array([])
    out.update(summarize(ttfts, "ttft"))
    out.update(summarize(tpots, "tpot"))
    out.update(summarize(gaps, "itl"))
    out.update(summarize(e2els, "e2el"))
    support = sample_support({"ttft": int(ttfts.size), "tpot": int(tpots.size),
                              "itl": int(gaps.size), "e2el": int(e2els.size)})
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
    return {**out, **support}  # type: ignore[dict-item]


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
