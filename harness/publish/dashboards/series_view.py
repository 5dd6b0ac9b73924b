"""A point's time series as charts a reader can read: one quantity family per chart, each with
its unit, and counters as rates (docs/dashboards.md).

The series file holds counters as the engine reports them, cumulative (docs/series.md): drawn
raw, prompt tokens, drafts and accepted tokens climb on one axis and nothing can be read off
them. Here every `*_total` becomes its rate per second between consecutive readings, speculative
counters also become the acceptance they imply over each interval, and traces are grouped by what
they measure. Pure functions of the traces `point_data.read_series` returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# family key -> (chart title, y-axis title with its unit)
FAMILIES: dict[str, tuple[str, str]] = {
    "load": ("Requests", "requests"),
    "tokens": ("Token throughput (server)", "tokens/s"),
    "spec_rate": ("Speculative decoding rates", "per second"),
    "acceptance": ("Acceptance over time", "acceptance length (tokens per verify step)"),
    "cache": ("KV cache and prefix hits", "ratio (0-1)"),
    "client_rate": ("Client send rate", "requests/s"),
    "client_lag": ("Client event-loop lag", "ms"),
    "power": ("Accelerator power", "W"),
    "util": ("Accelerator utilisation", "%"),
    "memory": ("Accelerator memory used", "MiB"),
    "host_cpu": ("Host CPU", "cores (1 = one core busy)"),
    "host_steal": ("Host steal", "share of CPU time (0-1)"),
    "other": ("Other series", "value"),
}
# name -> (family, label); names ending in _total not listed here are rated into "other"
NAMES: dict[str, tuple[str, str]] = {
    "num_requests_running": ("load", "running (server)"),
    "num_requests_waiting": ("load", "waiting (server)"),
    "inflight": ("load", "in flight (client)"),
    "prompt_tokens_total": ("tokens", "prompt tokens/s"),
    "generation_tokens_total": ("tokens", "generated tokens/s"),
    "cached_tokens_total": ("tokens", "cached prompt tokens/s"),
    # vLLM's prefix_cache_queries / prefix_cache_hits count tokens (so do the others' mappings)
    "prefix_queries_total": ("tokens", "prefix-cache queried tokens/s"),
    "prefix_hits_total": ("tokens", "prefix-cache hit tokens/s"),
    "spec_drafts_total": ("spec_rate", "verify steps with drafts/s"),
    "spec_draft_tokens_total": ("spec_rate", "draft tokens/s"),
    "spec_accepted_total": ("spec_rate", "accepted draft tokens/s"),
    "spec_al_gauge": ("acceptance", "AL (engine gauge)"),
    "kv_usage": ("cache", "KV-cache usage"),
    "send_rate": ("client_rate", "sends/s"),
    "loop_lag_ms": ("client_lag", "worst timer lateness per 1 s"),
    "power_w": ("power", "board power"),
    "util_pct": ("util", "utilisation"),
    "mem_used_mib": ("memory", "memory used"),
    # the host's CPU over each interval (harness/telemetry/host.py series_rows)
    "ours_cpu": ("host_cpu", "harness + engine (cores)"),
    "foreign_cpu": ("host_cpu", "everything else (cores)"),
    "foreign_procs_cpu": ("host_cpu", "other processes (cores)"),
    "kernel_cpu": ("host_cpu", "kernel threads (cores)"),
    "steal_share": ("host_steal", "hypervisor steal (share of CPU time)"),
}


def rate(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-second rate of a cumulative counter between consecutive readings, stamped at each
    interval's end; intervals where the counter went backwards (a restart) are left out."""
    t, v = np.asarray(t, float), np.asarray(v, float)
    if t.size < 2:
        return t[:0], v[:0]
    dt, dv = np.diff(t), np.diff(v)
    keep = (dt > 0) & (dv >= 0)
    return t[1:][keep], dv[keep] / dt[keep]


def interval_ratio(t_num: np.ndarray, num: np.ndarray, t_den: np.ndarray, den: np.ndarray,
                   offset: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """offset + Δnum/Δden over each interval of the readings both counters share (the
    acceptance of each second: 1 + Δaccepted/Δdrafts); intervals with Δden = 0 are gaps."""
    common, i, j = np.intersect1d(np.asarray(t_num, float), np.asarray(t_den, float),
                                  return_indices=True)
    if common.size < 2:
        return common[:0], common[:0]
    dn, dd = np.diff(np.asarray(num, float)[i]), np.diff(np.asarray(den, float)[j])
    keep = (dd > 0) & (dn >= 0)
    return common[1:][keep], offset + dn[keep] / dd[keep]


def _label(s: dict[str, Any], label: str) -> str:
    return " · ".join(x for x in (s.get("device") and f"GPU {s['device']}", label) if x)


def families(traces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """[{key, title, unit, traces: [{name, t, v}]}], in FAMILIES order, empty ones left out."""
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in FAMILIES}
    by_name: dict[str, dict[str, Any]] = {}
    for s in traces:
        name = str(s["name"])
        if s.get("source") == "server" and not s.get("device"):
            by_name[name] = s
        fam, label = NAMES.get(name, ("other", name))
        t, v = np.asarray(s["t"], float), np.asarray(s["v"], float)
        if name.endswith("_total"):
            t, v = rate(t, v)
            if name not in NAMES:
                label = f"{name.removesuffix('_total')} /s"
        elif name.endswith(" /s"):  # already a rate (older runs' server samples)
            fam = "other"
        if t.size:
            out[fam].append({"name": _label(s, label), "t": t, "v": v})
    drafts, acc = by_name.get("spec_drafts_total"), by_name.get("spec_accepted_total")
    if drafts and acc:
        t, v = interval_ratio(acc["t"], acc["v"], drafts["t"], drafts["v"], offset=1.0)
        if t.size:
            out["acceptance"].append({"name": "AL per interval (1 + accepted/drafts)",
                                      "t": t, "v": v})
    hits, queries = by_name.get("prefix_hits_total"), by_name.get("prefix_queries_total")
    if hits and queries:
        t, v = interval_ratio(hits["t"], hits["v"], queries["t"], queries["v"])
        if t.size:
            out["cache"].append({"name": "prefix hit rate per interval", "t": t, "v": v})
    return [{"key": k, "title": FAMILIES[k][0], "unit": FAMILIES[k][1], "traces": v}
            for k, v in out.items() if v]


def flat_zero(t: dict[str, Any]) -> bool:
    """A trace that is 0 (or nothing) throughout: a counter the engine exports but this point
    never moved (drafts on a plain point, KV on an idle cache). Drawn, it reads as a result."""
    v = np.asarray(t["v"], float)
    v = v[np.isfinite(v)]
    return not v.size or not np.any(v)


def drawn_families(traces: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """`families` without flat-zero traces (a family left empty is not drawn), and the names
    of the traces left out, for the page to list in one line."""
    fams, zero = [], []
    for f in families(traces):
        keep = [t for t in f["traces"] if not flat_zero(t)]
        zero += [t["name"] for t in f["traces"] if flat_zero(t)]
        if keep:
            fams.append({**f, "traces": keep})
    return fams, zero
