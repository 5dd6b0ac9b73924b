"""AgentX's aggregate figures of an agentic point, under our names (harness/catalogue/agentx.py
maps each to AgentX's): what InferenceX's agentic aggregation reports beyond the core metrics
(docs/upstream/agentx.md §2.2-2.3a). Pure functions of the point's records.

Upstream's record set is ours: its profiling records without an error are our measured
requests with timing (harness.record.metrics.has_timing); its warmup records are our warmup turns
and one-token probes. Statistics are AgentX's: mean, p50, p75, p90, p95 (linear
interpolation) and the population std (SemiAnalysisAI/InferenceX:infx/results/agentic/
common.py@a30c9cb26d6d2a218ef87aadcaf854123ffcf71e).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from harness.engines.sampler import Sampled
from harness.record.metrics import e2el, has_timing, input_tokens, output_tokens, tpot, ttft
from harness.records import PHASE_MEASURED, RequestRecord
from harness.workloads.base import Measurement

# AgentX's statistics under our names (p50 is our `median`).
AGENTX_STATS = {"mean": None, "median": 50.0, "p75": 75.0, "p90": 90.0, "p95": 95.0,
                "std": None}
QPS_WINDOW_S = 1.0  # request_metrics.py's window
# utils/agentic/aggregation/stability_metrics.py@0a12c4223215bb5b93c2c9a6261a212a7badb999
STABILITY_WINDOW_S = 600.0
STABILITY_PERCENTILES = (75, 90)


def agentx_stats(values: Iterable[float], name: str) -> dict[str, float]:
    """`{stat}_{name}` for AgentX's six statistics; {} without values (as upstream)."""
    a = np.asarray(list(values), dtype=float)
    if a.size == 0:
        return {}
    out = {f"{s}_{name}": float(np.percentile(a, q)) for s, q in AGENTX_STATS.items()
           if q is not None}
    out[f"mean_{name}"] = float(a.mean())
    out[f"std_{name}"] = float(a.std()) if a.size > 1 else 0.0
    return out


def is_kept(r: RequestRecord) -> bool:
    return r.phase == PHASE_MEASURED and has_timing(r)


def error_category(r: RequestRecord) -> str:
    """The `type` of the AIPerf error object we export for a record without timing, which is
    what InferenceX counts error categories by."""
    if r.truncated and not r.error:
        return "StreamTruncated"
    if not r.error:
        return "NoContent" if r.ok else f"HTTP{r.http_status or 0}"
    return r.error.split(":", 1)[0].strip()[:120] or "Error"


def request_accounting(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """records_total/profiled/dropped as load_records_with_accounting counts them: a warmup
    record with an error counts in both dropped counters, once in the total dropped."""
    warm = [r for r in records if r.phase != PHASE_MEASURED]
    errors = [r for r in records if not has_timing(r)]
    kept = [r for r in records if is_kept(r)]
    return {"acct_records_total": len(records), "acct_records_profiled": len(kept),
            "acct_dropped_total": len(records) - len(kept),
            "acct_warmup_dropped": len(warm), "acct_error_dropped": len(errors),
            "acct_error_categories": dict(sorted(Counter(map(error_category, errors)).items()))}


def qps_windows(end_ts: Iterable[float]) -> list[float]:
    """Requests ended in each full 1 s window from the first end: [t0 + i, t0 + i + 1) while
    t0 + i + 1 <= the last end (compute_qps_stats)."""
    ends = sorted(t for t in end_ts if math.isfinite(t))
    if len(ends) < 2 or ends[-1] <= ends[0]:
        return []
    out, t = [], ends[0]
    while t + QPS_WINDOW_S <= ends[-1]:
        out.append((bisect_left(ends, t + QPS_WINDOW_S) - bisect_left(ends, t)) / QPS_WINDOW_S)
        t += QPS_WINDOW_S
    return out


def qps_facts(kept: Sequence[RequestRecord]) -> dict[str, Any]:
    ends = [r.end_ts for r in kept]
    counts = qps_windows(ends)
    out: dict[str, Any] = {"qps_1s_windows": len(counts), **agentx_stats(counts, "qps_1s")}
    span = max(ends, default=0.0) - min(ends, default=0.0)
    if not counts and len(ends) >= 2 and span > 0:  # no full window: upstream's mean only
        out["mean_qps_1s"] = len(ends) / span
    return out


def inverse_stats(ratios: Sequence[float], name: str) -> dict[str, float]:
    """AgentX's interactivity from a per-request time per token: mean..p95 = 1 / the same
    statistic of the ratios; std = population std of the per-request 1 / ratio."""
    st = agentx_stats([x for x in ratios if x > 0], "x")
    out = {f"{s}_{name}": 1.0 / st[f"{s}_x"] for s in AGENTX_STATS
           if s != "std" and st.get(f"{s}_x", 0) > 0}
    inv = np.asarray([1.0 / x for x in ratios if x > 0])
    if inv.size:
        out[f"std_{name}"] = float(inv.std()) if inv.size > 1 else 0.0
    return out


def latency_extras(kept: Sequence[RequestRecord]) -> dict[str, float]:
    """What AgentX reports that the core metrics do not: the mean and std of E2E-normalized
    interactivity, and the std of per-request interactivity (1 / TPOT of each request)."""
    e2e = [e2el(r) / output_tokens(r) for r in kept if output_tokens(r) > 0 and e2el(r) > 0]
    tpots = [t for r in kept if math.isfinite(t := tpot(r)) and t > 0]
    out = {k: v for k, v in inverse_stats(e2e, "e2e_intvty").items()
           if k in ("mean_e2e_intvty", "std_e2e_intvty")}
    if (per := inverse_stats(tpots, "request_intvty").get("std_request_intvty")) is not None:
        out["std_request_intvty"] = per
    return out


def token_facts(kept: Sequence[RequestRecord]) -> dict[str, float]:
    """tokens.input / output_actual / output_expected (the trace's recorded output)."""
    expected = [float(r.tags["out"]) for r in kept if isinstance(r.tags.get("out"), int)]
    return {**agentx_stats([input_tokens(r) for r in kept], "input_tokens"),
            **agentx_stats([output_tokens(r) for r in kept], "output_tokens"),
            **agentx_stats(expected, "expected_output_tokens")}


def _percentile(values: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), p))


def _window_ranges(blocks: Mapping[int, list[RequestRecord]]) -> dict[str, Any]:
    """Per window p75/p90 of TTFT and E2EL, and 1 / p(TPOT), as {min, max} over windows."""
    per: dict[str, list[float]] = {}
    for recs in blocks.values():
        for name, values in (("ttft", [ttft(r) for r in recs]),
                             ("e2el", [e2el(r) for r in recs]),
                             ("intvty", [tpot(r) for r in recs])):
            values = [v for v in values if math.isfinite(v) and v > 0]
            for p in STABILITY_PERCENTILES if values else ():
                v = _percentile(values, p)
                per.setdefault(f"{name}.p{p}", []).append(1.0 / v if name == "intvty" else v)
    out: dict[str, Any] = {"ttft": {}, "e2el": {}, "intvty": {}}
    for key, vals in per.items():
        name, p = key.split(".")
        out[name][p] = {"min": min(vals), "max": max(vals)}
    return out


def stability_facts(kept: Sequence[RequestRecord], duration_s: float,
                    window_s: float = STABILITY_WINDOW_S) -> dict[str, Any]:
    """Fixed-window diagnostics and trajectory coverage (compute_stability_metrics): windows
    from the first issue, as many as the configured duration holds whole; root trajectory =
    the source trace."""
    per_trace = Counter(str(r.tags.get("trace") or "unknown") for r in kept)
    n = sum(per_trace.values())
    squares = sum(c * c for c in per_trace.values())
    expected = int(duration_s // window_s) if duration_s > 0 else 0
    stamps = [(r.issue_ts if math.isfinite(r.issue_ts) else r.send_ts, r) for r in kept]
    stamps = [(t, r) for t, r in stamps if math.isfinite(t)]
    blocks: dict[int, list[RequestRecord]] = {}
    if stamps and expected:
        t0 = min(t for t, _ in stamps)
        for t, r in stamps:
            if 0 <= (b := int((t - t0) // window_s)) < expected:
                blocks.setdefault(b, []).append(r)
    return {
        "stab_window_s": window_s, "stab_expected_windows": expected,
        "stab_observed_windows": len(blocks),
        "stab_min_window_requests": min((len(b) for b in blocks.values()), default=0),
        "stab_ranges": _window_ranges(blocks) if len(blocks) >= 2 else {},
        "traj_root_count": len(per_trace),
        "traj_kish_effective": n * n / squares if squares else 0.0,
        "traj_largest_share": max(per_trace.values(), default=0) / n if n else 0.0,
    }


def agentx_facts(meas: Measurement, metrics: Mapping[str, Any],
                 samples: Sampled = ()) -> dict[str, Any]:
    """Every AgentX aggregate that applies and the core metrics do not already hold."""
    records = meas.records
    kept = [r for r in records if is_kept(r)]
    return {**request_accounting(records), **qps_facts(kept), **latency_extras(kept),
            **token_facts(kept), **stability_facts(kept, meas.measured.duration_s)}
