"""An agentic point as AIPerf's artifacts, the inputs of InferenceX's AgentX aggregation:
`<RESULT_FILENAME>/aiperf_artifacts/{profile_export.jsonl, profile_export_aiperf.json,
server_metrics_export.json}` and `<RESULT_FILENAME>.env`.

What InferenceX reads, and therefore what is written (docs/upstream/agentx.md §2.3a, §3.7):
- profile_export.jsonl, one record per request: `metadata.benchmark_phase` (anything but
  "profiling" is warmup and dropped), `error` (truthy: dropped), `metrics.<name>.value` of
  time_to_first_token, request_latency, inter_token_latency (ms), input_sequence_length,
  output_sequence_length (tokens), `metadata.request_start_ns/request_end_ns` (epoch ns: the
  throughput span and QPS windows), credit_issued_ns, conversation_id, turn_index
  (SemiAnalysisAI/InferenceX:infx/results/agentic/request_metrics.py
  @26d452f5afa629ff5a1e80efff19d7d419020a8f). Record shape: AIPerf's MetricRecordInfo
  (ai-dynamo/aiperf:docs/tutorials/working-with-profile-exports.md
  @13992dbd96879c76e9584f2e8dc05db49bee6cf2).
- profile_export_aiperf.json: per-metric aggregates `{unit, avg, min, max, std, pNN, count,
  sum}` (ai-dynamo/aiperf:src/aiperf/common/models/export_models.py
  @26240f9e48bd11b1890ec0bfab778fd82481869f); InferenceX reads `theoretical_prefix_cache_hit`
  (sum/count, else avg/100 for unit "%"), `metadata.dataset` and
  `input_config.loadgen.benchmark_duration`.
- server_metrics_export.json: `metrics{name: {type, series[{endpoint_url, labels, stats}]}}`,
  counter stats `total` = increase over the window
  (ai-dynamo/aiperf:docs/server-metrics/server-metrics-json-schema.md
  @13992dbd96879c76e9584f2e8dc05db49bee6cf2); names are Prometheus family names (no `_total`),
  as InferenceX's adapters look them up (infx/results/agentic/backends/vllm.py
  @a30c9cb26d6d2a218ef87aadcaf854123ffcf71e reads `vllm:prompt_tokens`).

Per request the values are our own definitions (harness.metrics), which are AIPerf's:
request_latency = our E2EL (last content chunk), and AIPerf's inter_token_latency is
(request_latency - TTFT) / (OSL - 1) = our TPOT (ai-dynamo/aiperf:docs/metrics_reference.md
@3a4b58d508f0b975f84e05684684bd4890037369), so InferenceX's p90 intvty = 1 / p90 ITL is our
p90_intvty (unless a reply had TPOT 0, see record_metrics), and its E2E-normalized
interactivity 1 / p90(E2EL / OSL) our p90_e2e_intvty.

Where upstream's number will differ from ours by definition: throughput. InferenceX divides the
tokens by the kept records' span (last request_end_ns - first request_start_ns); our point
divides the same tokens by its measured window, which also holds the think time after the
last request. They agree when requests are in flight across the whole window (a loaded
3600 s run); on a short, idle-heavy point upstream's figure is higher. The timestamps are
written as measured, not stretched to make the two agree.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from harness.exports.inferencex_fixed import base_env, env_text, job_config
from harness.metrics import e2el, has_timing, input_tokens, itls, output_tokens, tpot, ttft
from harness.point_record import PointRecord
from harness.records import PHASE_MEASURED, RequestRecord
from harness.results import atomic_write, dumps

ARTIFACTS = "aiperf_artifacts"
# AIPerf's JsonMetricResult percentiles.
AGG_PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
_RECORD_FIELDS = tuple(RequestRecord.__dataclass_fields__)


class ArtifactError(ValueError):
    """The point's files in the run directory cannot be read."""


def read_requests(run_dir: Path, point_id: str) -> list[RequestRecord]:
    """requests/<point_id>.parquet back into RequestRecords (warmup and probes included)."""
    import pandas as pd

    path = run_dir / "requests" / f"{point_id}.parquet"
    if not path.is_file():
        raise ArtifactError(f"{path}: missing; an agentic point cannot be exported without "
                            "its requests (re-measure it: harness sweep with the same run_id)")
    try:
        rows = pd.read_parquet(path).to_dict("records")
    except Exception as e:  # pyarrow raises several types for one bad file
        raise ArtifactError(f"{path}: unreadable ({e})") from None
    out = []
    for row in rows:
        kw = {k: v for k, v in row.items() if k in _RECORD_FIELDS}
        kw["chunk_ts"] = [float(t) for t in row.get("chunk_ts", ())]
        kw["chunk_tokens"] = [int(t) for t in row.get("chunk_tokens", ())]
        kw["tags"] = orjson.loads(row.get("tags") or "{}")
        out.append(RequestRecord(**kw))
    return out


@dataclass(frozen=True)
class Clock:
    """Our monotonic stamps -> AIPerf's epoch nanoseconds. The measured window's start is
    stamped on both clocks (measured_start_wall), so a constant offset maps one to the other;
    integer arithmetic keeps differences exact to the nanosecond."""

    mono0: float
    wall0_ns: int

    def ns(self, t: float) -> int | None:
        if not math.isfinite(t):
            return None
        return self.wall0_ns + round((t - self.mono0) * 1e9)


def clock_for(rec: PointRecord, sm: Mapping[str, Any],
              records: Sequence[RequestRecord]) -> Clock:
    window = sm.get("measured_window") or []
    sends = [r.send_ts for r in records if r.phase == PHASE_MEASURED and math.isfinite(r.send_ts)]
    mono0 = float(window[0]) if window else min(sends, default=0.0)
    wall = rec.provenance.get("measured_start_wall")
    wall0 = float(wall) if isinstance(wall, int | float) else time.time()
    return Clock(mono0, round(wall0 * 1e9))


def _metric(value: Any, unit: str) -> dict[str, Any]:
    return {"value": value, "unit": unit}


def record_metrics(r: RequestRecord) -> dict[str, Any]:
    """AIPerf's per-record metrics in its units (ms, tokens), from our definitions."""
    osl = output_tokens(r)
    m = {
        "input_sequence_length": _metric(input_tokens(r), "tokens"),
        "time_to_first_token": _metric(ttft(r) * 1000.0, "ms"),
        "request_latency": _metric(e2el(r) * 1000.0, "ms"),
        "output_token_count": _metric(osl, "tokens"),
        "output_sequence_length": _metric(osl, "tokens"),
        "inter_chunk_latency": _metric([g * 1000.0 for g in itls(r).tolist()], "ms"),
    }
    t = tpot(r)
    # AIPerf has no ITL below two output tokens or two content chunks (its metrics reference,
    # cited above); InferenceX drops ITL <= 0 anyway. Our TPOT is 0 for a two-token,
    # one-chunk reply and counts in our TPOT statistics: such points differ from upstream's
    # interactivity.
    if math.isfinite(t) and t > 0 and len(r.chunk_ts) >= 2:
        m["inter_token_latency"] = _metric(t * 1000.0, "ms")
        m["output_token_throughput_per_user"] = _metric(1.0 / t, "tokens/sec/user")
    return m


def _error(r: RequestRecord) -> dict[str, Any]:
    """AIPerf's ErrorDetails; `type` is what InferenceX counts error categories by."""
    if r.truncated and not r.error:
        kind, message = "StreamTruncated", "the stream ended without its terminator"
    elif not r.error and r.ok:
        kind, message = "NoContent", "the response carried no content"
    else:
        kind, message = (r.error.split(":", 1)[0].strip() or "Error"), r.error
    return {"code": r.http_status or None, "type": kind, "message": message}


def record_line(r: RequestRecord, clock: Clock, session_num: int) -> dict[str, Any]:
    t = r.tags
    session, agent = str(t.get("session", "")), str(t.get("agent", ""))
    path = [p for p in agent.split("/") if p]
    conv = str(t.get("trace", "")) + "".join(f"::sa:{p}" for p in path)
    meta = {
        "session_num": session_num, "x_request_id": r.request_id,
        "x_correlation_id": "/".join([session, *path]), "conversation_id": conv,
        "turn_index": t.get("turn", 0), "source_trace_id": t.get("trace"),
        "credit_issued_ns": clock.ns(r.issue_ts), "request_start_ns": clock.ns(r.send_ts),
        "request_ack_ns": None, "request_end_ns": clock.ns(r.end_ts),
        "worker_id": f"lane_{t.get('lane', 0)}", "record_processor_id": "harness",
        # warmup turns and one-token probes are AIPerf's warmup phase
        "benchmark_phase": "profiling" if r.phase == PHASE_MEASURED else "warmup",
        "was_cancelled": False, "cancellation_time_ns": None, "agent_depth": len(path),
        "parent_correlation_id": "/".join([session, *path[:-1]]) if path else None,
        "root_correlation_id": session,
    }
    if has_timing(r):
        return {"metadata": meta, "metrics": record_metrics(r), "error": None}
    return {"metadata": meta,
            "metrics": {"error_isl": _metric(r.expected_prompt_tokens, "tokens")},
            "error": _error(r)}


def profile_lines(records: Sequence[RequestRecord], clock: Clock) -> list[dict[str, Any]]:
    sessions: dict[str, int] = {}
    out = []
    for r in sorted(records, key=lambda r: (r.send_ts if math.isfinite(r.send_ts) else math.inf)):
        n = sessions.setdefault(str(r.tags.get("session", "")), len(sessions))
        out.append(record_line(r, clock, n))
    return out


def _stats(values: Sequence[float], unit: str) -> dict[str, Any]:
    """AIPerf's JsonMetricResult of one record metric (numpy percentiles, linear)."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"unit": unit, "count": 0}
    pct = np.percentile(a, AGG_PERCENTILES)
    return {"unit": unit, "avg": float(a.mean()), "min": float(a.min()), "max": float(a.max()),
            "std": float(a.std()), **{f"p{p}": float(v) for p, v in zip(AGG_PERCENTILES, pct,
                                                                          strict=True)},
            "count": int(a.size), "sum": float(a.sum())}


def _single(value: Any, unit: str) -> dict[str, Any]:
    return {"unit": unit, "avg": value}


def aggregate(lines: Sequence[Mapping[str, Any]], rec: PointRecord,
              cfg: Mapping[str, Any]) -> dict[str, Any]:
    """profile_export_aiperf.json over the profiling records, as AIPerf aggregates them."""
    kept = [x for x in lines
            if x["metadata"]["benchmark_phase"] == "profiling" and not x["error"]]
    errors = sum(1 for x in lines if x["metadata"]["benchmark_phase"] == "profiling"
                 and x["error"])

    def values(name: str) -> list[float]:
        return [x["metrics"][name]["value"] for x in kept if name in x["metrics"]]

    dur = float(rec.get("duration_s") or 0.0)
    osl, isl = sum(values("output_sequence_length")), sum(values("input_sequence_length"))
    out: dict[str, Any] = {
        "schema_version": "1.0", "aiperf_version": None, "benchmark_id": rec.point_id,
        **{name: _stats(values(name), unit) for name, unit in (
            ("time_to_first_token", "ms"), ("request_latency", "ms"),
            ("inter_token_latency", "ms"), ("input_sequence_length", "tokens"),
            ("output_sequence_length", "tokens"),
            ("output_token_throughput_per_user", "tokens/sec/user"))},
        # Our measured window: AIPerf's profiling phase (requests in flight at its end finish).
        "benchmark_duration": _single(dur, "sec"),
        "request_count": _single(len(kept), "requests"),
        "error_request_count": _single(errors, "requests"),
        "request_throughput": _single(len(kept) / dur if dur > 0 else None, "requests/sec"),
        "output_token_throughput": _single(osl / dur if dur > 0 else None, "tokens/sec"),
        "total_isl": _single(isl, "tokens"), "total_osl": _single(osl, "tokens"),
        "context_overflow_count": rec.get("num_context_overflow") or 0,
        "metadata": _metadata(rec, cfg), "input_config": _input_config(rec, cfg),
    }
    hit = rec.get("theoretical_hit_rate")
    if isinstance(hit, int | float) and math.isfinite(hit):
        # Our rate is hit tokens / prompt tokens of measured requests; written as AIPerf's
        # percentage (no sum/count, which would have to be block counts).
        out["theoretical_prefix_cache_hit"] = {"unit": "%", "avg": 100.0 * hit}
    return out


def _metadata(rec: PointRecord, cfg: Mapping[str, Any]) -> dict[str, Any]:
    scen = cfg.get("scenario") or {}
    # No `hf_dataset_name`: InferenceX would then look for the trace in a Hugging Face cache.
    dataset = {"source_type": "harness", "loader": scen.get("trace_format"),
               "trace_files": scen.get("trace_files"), "fit_mode": scen.get("fit_mode")}
    return {"scenario": rec.identity.scenario, "submission_valid": rec.valid,
            "submission_invalid_reasons": list(rec.reasons), "dataset": dataset}


def _input_config(rec: PointRecord, cfg: Mapping[str, Any]) -> dict[str, Any]:
    scen = cfg.get("scenario") or {}
    return {"loadgen": {"concurrency": rec.identity.conc,
                        "benchmark_duration": scen.get("duration_s", rec.get("duration_s"))},
            "endpoint": {"model_names": [rec.identity.hf_id or rec.identity.model],
                         "url": (cfg.get("engine") or {}).get("url")}}


def agentic_env(rec: PointRecord, name: str, cfg: Mapping[str, Any]) -> dict[str, str]:
    """Every variable process_agentic_result.py reads (infx/results/agentic/__init__.py
    @1fe2755144ea7ca66b1244c14a7b4d982a2cacc0, docs/upstream/agentx.md §2.1). RESULT_DIR is
    relative: run the aggregation from the export directory."""
    scen = cfg.get("scenario") or {}
    return {**base_env(rec), "RESULT_FILENAME": name, "RESULT_DIR": name,
            "AGENTIC_OUTPUT_DIR": ".", "SCENARIO_TYPE": "agentic-coding", "IS_AGENTIC": "1",
            # their workflow passes ISL = OSL = 0 for agentic jobs
            "ISL": "0", "OSL": "0", "DURATION": str(scen.get("duration_s", "")),
            # no KV offload here; the backend fields must then be empty
            "KV_OFFLOADING": "none", "KV_OFFLOAD_BACKEND": "",
            "KV_OFFLOAD_BACKEND_METADATA": "", "TOTAL_CPU_DRAM_GB": "0"}


def export_point(run_dir: Path, rec: PointRecord, name: str, out: Path) -> list[Path]:
    cfg = job_config(run_dir, rec)
    sm = _server_metrics(run_dir, rec.point_id)
    records = read_requests(run_dir, rec.point_id)
    clock = clock_for(rec, sm, records)
    lines = profile_lines(records, clock)
    art = out / name / ARTIFACTS
    files = {
        art / "profile_export.jsonl": b"".join(dumps(x) + b"\n" for x in lines),
        art / "profile_export_aiperf.json": dumps(aggregate(lines, rec, cfg)),
        art / "server_metrics_export.json": dumps(server_metrics_export(sm, rec, cfg, clock)),
        out / f"{name}.env": env_text(agentic_env(rec, name, cfg)),
    }
    for path, data in files.items():
        atomic_write(path, data)
    return list(files)


def _server_metrics(run_dir: Path, point_id: str) -> dict[str, Any]:
    path = run_dir / "server_metrics" / f"{point_id}.json"
    if not path.is_file():
        return {}
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as e:
        raise ArtifactError(f"{path}: unreadable ({e})") from None


# ---- server_metrics_export.json -------------------------------------------------------------
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
        return name[: -len("_total")], "counter", ""
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
        if kind == "counter":
            stats = _counter_stats(before.get(key, after[key]), after[key],
                                   _window_values(samples, key, t0, t1), dur)
            entry["series"].append({"endpoint_url": url, "labels": labels or None,
                                    "stats": stats})
        elif kind == "gauge":
            vals = [v for _, v in _window_values(samples, key, t0, t1)] or [after[key]]
            entry["series"].append({"endpoint_url": url, "labels": labels or None,
                                    "stats": _gauge_stats(vals)})
        else:
            _add_histogram_part(hists, entry, url, family, part, labels, delta)
    for h in hists.values():
        _finish_histogram(h, dur)
    return {"schema_version": "1.0", "aiperf_version": None, "benchmark_id": rec.point_id,
            "summary": _summary(url, samples, clock, t0, t1), "metrics": metrics,
            "input_config": _input_config(rec, cfg)}


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
