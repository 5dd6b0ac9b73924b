"""server_metrics_export.json of an agentic point: our /metrics scrapes of the point
(results/<run>/server_metrics/<point_id>.json: the scrapes at the measured window's start and
end, and one a second throughout) in AIPerf's layout, which InferenceX's agentic adapters
read (docs/upstream/agentx.md §2.3, §3.7):
`metrics{name: {type, description, series[{endpoint_url, labels, stats, timeslices}]}}`
(ai-dynamo/aiperf:docs/server-metrics/server-metrics-json-schema.md
@13992dbd96879c76e9584f2e8dc05db49bee6cf2). Names are Prometheus family names, as InferenceX
looks them up (infx/results/agentic/backends/vllm.py@a30c9cb26d6d2a218ef87aadcaf854123ffcf71e
reads `vllm:prompt_tokens`).

Counters: `total` = the increase over the measured window (the same deltas as the point's
server_* fields), `rate` = total / window; gauges: statistics of the samples inside the window
(AIPerf's sample std); histograms: count/sum/bucket deltas (AIPerf's percentile estimates are
left out). Timeslices are 1 s wide from the window's start (InferenceX passes
`--slice-duration 1.0`); the last one, cut by the window's end, says `is_complete: false`.
Our scrapes are a second apart where AIPerf's are ~333 ms: a gauge slice holds one reading.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from harness.publish.exports.aiperf_records import AGG_PERCENTILES, Clock, input_config
from harness.record.point_record import PointRecord

SLICE_S = 1.0
_KEY = re.compile(r'([^{]+)(?:\{(.*)\})?\Z')
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def split_key(key: str) -> tuple[str, dict[str, str]]:
    """`name{a="x",b="y"}` (our stored series key) -> (name, labels)."""
    m = _KEY.match(key)
    if not m:
        return key, {}
    labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
              for k, v in _LABEL.findall(m.group(2) or "")}
    return m.group(1), labels


def _kind(name: str, labels: Mapping[str, str], hist_bases: set[str]) -> tuple[str, str, str]:
    """(family, type, part). We stored values without the text's TYPE lines, so the type is
    read from the name the way Prometheus spells it: `_bucket{le}`/`_sum`/`_count` of a
    histogram, `_total` of a counter, anything else a gauge."""
    for part in ("_bucket", "_sum", "_count"):
        if name.endswith(part) and name[: -len(part)] in hist_bases:
            return name[: -len(part)], "histogram", part
    if name.endswith("_total"):
        # AIPerf names a family as the text's TYPE line does: prometheus_client strips
        # `_total` from a Counter's name (vLLM, SGLang, ATOM), TensorRT-LLM's multiprocess
        # families keep it (InferenceX's adapter reads `trtllm_prompt_tokens_total`,
        # SemiAnalysisAI/InferenceX:infx/results/agentic/backends/trtllm.py
        # @a30c9cb26d6d2a218ef87aadcaf854123ffcf71e).
        keep = name.startswith("trtllm_")
        return (name if keep else name[: -len("_total")]), "counter", ""
    return name, "gauge", ""


def _window_values(samples: Sequence[Mapping[str, Any]], key: str,
                   t0: float, t1: float) -> list[tuple[float, float]]:
    return [(float(s["t"]), float(s["metrics"][key])) for s in samples
            if t0 <= float(s["t"]) <= t1 and key in s.get("metrics", {})]


def _counter_stats(before: float, after: float, series: list[tuple[float, float]],
                   dur: float) -> dict[str, Any]:
    total = max(after - before, 0.0)  # a reset (restart) is clamped to 0, as AIPerf does
    st: dict[str, Any] = {"total": total, "rate": total / dur if dur > 0 else 0.0}
    rates = [max(b[1] - a[1], 0.0) / (b[0] - a[0])
             for a, b in itertools.pairwise(series) if b[0] > a[0]]
    if total and rates:
        r = np.asarray(rates)
        st.update(rate_avg=float(r.mean()), rate_min=float(r.min()), rate_max=float(r.max()),
                  rate_std=float(r.std()))
    return st


def _gauge_stats(values: Sequence[float]) -> dict[str, Any]:
    a = np.asarray(values, dtype=float)
    pct = np.percentile(a, AGG_PERCENTILES)
    return {"avg": float(a.mean()), "min": float(a.min()), "max": float(a.max()),
            "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,  # AIPerf: sample std
            **{f"p{p}": float(v) for p, v in zip(AGG_PERCENTILES, pct, strict=True)}}


def _series(sm: Mapping[str, Any]) -> list[tuple[str, str, str, dict[str, str], str]]:
    """(family, type, part, labels, stored key) for every series present at the end."""
    after = sm.get("after") or {}
    parsed = [(key, *split_key(key)) for key in after]
    hist = {n[: -len("_bucket")] for _, n, lab in parsed if n.endswith("_bucket") and "le" in lab}
    out = []
    for key, name, labels in parsed:
        if name.endswith("_created"):  # prometheus_client's creation stamps: not a metric
            continue
        family, kind, part = _kind(name, labels, hist)
        out.append((family, kind, part, labels, key))
    return out


def server_metrics_export(sm: Mapping[str, Any], rec: PointRecord, cfg: Mapping[str, Any],
                          clock: Clock) -> dict[str, Any]:
    """Our /metrics scrapes of the point as AIPerf's server_metrics_export.json: counters as
    their increase over the measured window (the scrapes at its start and end, the same
    deltas the point's server_* fields hold), gauges over the samples inside the window,
    histograms as count/sum/bucket deltas (AIPerf's percentile estimates are left out)."""
    before, after = sm.get("before") or {}, sm.get("after") or {}
    window = sm.get("measured_window") or [0.0, 0.0]
    t0, t1 = float(window[0]), float(window[1])
    dur, samples = t1 - t0, sm.get("samples") or []
    url = f"{(cfg.get('engine') or {}).get('url') or 'http://localhost'}/metrics"
    metrics: dict[str, Any] = {}
    hists: dict[tuple[str, str], dict[str, Any]] = {}
    for family, kind, part, labels, key in _series(sm):
        entry = metrics.setdefault(family, {"type": kind, "description": "", "series": []})
        delta = max(after[key] - before.get(key, after[key]), 0.0)
        inside = _window_values(samples, key, t0, t1)
        if kind == "counter":
            start = before.get(key, 0.0 if before else after[key])
            stats = _counter_stats(start, after[key], inside, dur)
            slices = counter_slices([(t0, start), *inside, (t1, after[key])], t0, t1, clock)
            entry["series"].append({"endpoint_url": url, "labels": labels or None,
                                    "stats": stats, "timeslices": slices})
        elif kind == "gauge":
            vals = [v for _, v in inside] or [after[key]]
            entry["series"].append({"endpoint_url": url, "labels": labels or None,
                                    "stats": _gauge_stats(vals),
                                    "timeslices": gauge_slices(inside, t0, t1, clock)})
        else:
            _add_histogram_part(hists, entry, url, family, part, labels, delta)
    for h in hists.values():
        _finish_histogram(h, dur)
    return {"schema_version": "1.0", "aiperf_version": None, "benchmark_id": rec.point_id,
            "summary": _summary(url, samples, clock, t0, t1), "metrics": metrics,
            "input_config": input_config(rec, cfg)}


def _add_histogram_part(hists: dict[tuple[str, str], dict[str, Any]], entry: dict[str, Any],
                        url: str, family: str, part: str, labels: dict[str, str],
                        delta: float) -> None:
    le = labels.get("le")
    rest = {k: v for k, v in labels.items() if k != "le"}
    ident = (family, orjson.dumps(rest, option=orjson.OPT_SORT_KEYS).decode())
    if ident not in hists:
        hists[ident] = {"endpoint_url": url, "labels": rest or None,
                        "stats": {"count": 0, "sum": 0.0}, "buckets": {}}
        entry["series"].append(hists[ident])
    h = hists[ident]
    if part == "_bucket" and le is not None:
        h["buckets"][le] = round(delta)
    elif part == "_count":
        h["stats"]["count"] = round(delta)
    elif part == "_sum":
        h["stats"]["sum"] = delta


def _finish_histogram(h: dict[str, Any], dur: float) -> None:
    st = h["stats"]
    if not st["count"]:
        h["stats"] = {"count": 0}
        return
    st.update(avg=st["sum"] / st["count"], count_rate=st["count"] / dur if dur > 0 else 0.0,
              sum_rate=st["sum"] / dur if dur > 0 else 0.0)


def _summary(url: str, samples: Sequence[Mapping[str, Any]], clock: Clock, t0: float,
             t1: float) -> dict[str, Any]:
    def iso(t: float) -> str | None:
        ns = clock.ns(t)
        return None if ns is None else time.strftime("%Y-%m-%dT%H:%M:%S",
                                                     time.gmtime(ns / 1e9))

    stamps = [float(s["t"]) for s in samples]
    info = {"total_fetches": len(stamps) + 2,  # the samples plus the start and end scrapes
            "first_fetch_ns": clock.ns(min(stamps, default=t0)),
            "last_fetch_ns": clock.ns(max(stamps, default=t1)), "duration_seconds": t1 - t0}
    return {"endpoints_configured": [url], "endpoints_successful": [url],
            "start_time": iso(t0), "end_time": iso(t1), "endpoint_info": {url: info}}


def _slices(t0: float, t1: float) -> list[tuple[float, float]]:
    n = max(1, math.ceil((t1 - t0) / SLICE_S - 1e-9))
    return [(t0 + k * SLICE_S, min(t0 + (k + 1) * SLICE_S, t1)) for k in range(n)]


def _slice_head(a: float, b: float, clock: Clock) -> dict[str, Any]:
    head: dict[str, Any] = {"start_ns": clock.ns(a), "end_ns": clock.ns(b)}
    if b - a < SLICE_S - 1e-9:
        head["is_complete"] = False
    return head


def gauge_slices(inside: Sequence[tuple[float, float]], t0: float, t1: float,
                 clock: Clock) -> list[dict[str, Any]]:
    """avg/min/max of the readings in each slice; a slice without a reading is left out."""
    out = []
    for a, b in _slices(t0, t1):
        vals = [v for t, v in inside if a <= t < b or (b == t1 and t == t1)]
        if vals:
            out.append({**_slice_head(a, b, clock), "avg": sum(vals) / len(vals),
                        "min": min(vals), "max": max(vals)})
    return out


def counter_slices(points: Sequence[tuple[float, float]], t0: float, t1: float,
                   clock: Clock) -> list[dict[str, Any]]:
    """The increase in each slice: the last reading at or before its end minus the last at
    or before its start (a reset clamps to 0)."""
    pts = sorted(points)

    def at(t: float) -> float:
        v = pts[0][1]
        for ts, x in pts:
            if ts > t:
                break
            v = x
        return v

    out = []
    for a, b in _slices(t0, t1):
        total = max(at(b) - at(a), 0.0)
        out.append({**_slice_head(a, b, clock), "total": total,
                    "rate": total / (b - a) if b > a else 0.0})
    return out
