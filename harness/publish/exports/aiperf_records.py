"""profile_export.jsonl and profile_export_aiperf.json of an agentic point: AIPerf's request
records and aggregate, from our request records (harness.publish.exports.aiperf_agentic writes
them).

What InferenceX reads (docs/upstream/agentx.md §2.3a, §3.7): per record
`metadata.benchmark_phase` (anything but "profiling" is warmup and dropped), `error` (truthy:
dropped), `metrics.<name>.value` of time_to_first_token, request_latency, inter_token_latency
(ms), input_sequence_length, output_sequence_length (tokens), `metadata.request_start_ns/
request_end_ns` (epoch ns: the throughput span and QPS windows), credit_issued_ns,
conversation_id, turn_index, source_trace_id (SemiAnalysisAI/InferenceX:infx/results/agentic/
request_metrics.py@26d452f5afa629ff5a1e80efff19d7d419020a8f, utils/agentic/aggregation/
stability_metrics.py@0a12c4223215bb5b93c2c9a6261a212a7badb999). Record shape: AIPerf's
MetricRecordInfo (ai-dynamo/aiperf:docs/tutorials/working-with-profile-exports.md
@13992dbd96879c76e9584f2e8dc05db49bee6cf2); aggregates `{unit, avg, min, max, std, pNN,
count, sum}` (ai-dynamo/aiperf:src/aiperf/common/models/export_models.py
@26240f9e48bd11b1890ec0bfab778fd82481869f).

Per request the values are our own definitions (harness.record.metrics), which are AIPerf's:
request_latency = our E2EL (last content chunk), and AIPerf's inter_token_latency is
(request_latency - TTFT) / (OSL - 1) = our TPOT (ai-dynamo/aiperf:docs/metrics_reference.md
@3a4b58d508f0b975f84e05684684bd4890037369), so InferenceX's p90 intvty = 1 / p90 ITL is our
p90_intvty (TPOT 0 is left out on both sides), and its E2E-normalized
interactivity 1 / p90(E2EL / OSL) our p90_e2e_intvty. Our per-chunk gaps are exported as
AIPerf's inter_chunk_latency, which InferenceX does not read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.record.metrics import e2el, has_timing, input_tokens, itls, output_tokens, tpot, ttft
from harness.record.point_record import PointRecord
from harness.records import PHASE_MEASURED, RequestRecord
from harness.workloads.agentx_facts import error_category

# AIPerf's JsonMetricResult percentiles.
AGG_PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)


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
    # one-chunk (or one-read) reply, which our TPOT statistics leave out too
    # (harness.record.metrics.point_metrics).
    if math.isfinite(t) and t > 0 and len(r.chunk_ts) >= 2:
        m["inter_token_latency"] = _metric(t * 1000.0, "ms")
        m["output_token_throughput_per_user"] = _metric(1.0 / t, "tokens/sec/user")
    return m


def _error(r: RequestRecord) -> dict[str, Any]:
    """AIPerf's ErrorDetails; `type` is what InferenceX counts error categories by, and the
    category our point's acct_error_categories counts (agentx_facts.error_category)."""
    if r.truncated and not r.error:
        message = "the stream ended without its terminator"
    elif not r.error:
        message = "the response carried no content" if r.ok else f"HTTP {r.http_status}"
    else:
        message = r.error
    return {"code": r.http_status or None, "type": error_category(r), "message": message}


def record_metadata(r: RequestRecord, clock: Clock, session_num: int,
                    profiling_index: int | None) -> dict[str, Any]:
    """AIPerf's MetricRecordMetadata for one of our requests. Conversation ids follow its
    Weka loader: the trace id, then `::sa:<agent>` per sub-agent level (InferenceX maps a
    record to its trace by the part before the first `::`). The ids are the request's own
    X-Request-ID and X-Correlation-ID headers, with its tree's root and parent correlation ids
    (request_style=aiperf records them in the tags, harness.workloads.replay_sessions);
    records without them (request_style=harness, older runs) get ids built from our session
    and path."""
    t = r.tags
    session, agent = str(t.get("session", "")), str(t.get("agent", ""))
    path = [p for p in agent.split("/") if p]
    profiling = r.phase == PHASE_MEASURED  # warmup turns and probes are AIPerf's warmup
    sent = "x_correlation_id" in t
    return {
        "session_num": session_num,
        "x_request_id": str(t["x_request_id"]) if sent else r.request_id,
        "x_correlation_id": str(t["x_correlation_id"]) if sent else "/".join([session, *path]),
        "conversation_id": str(t.get("trace", "")) + "".join(f"::sa:{p}" for p in path),
        "turn_index": t.get("turn", 0), "source_trace_id": t.get("trace"),
        "source_outer_idx": t.get("turn", 0), "source_inner_idx": None,
        "source_kind": "subagent" if path else "root",
        "credit_issued_ns": clock.ns(r.issue_ts), "request_start_ns": clock.ns(r.send_ts),
        "request_ack_ns": clock.ns(r.first_token_ts) if has_timing(r) else None,
        "request_end_ns": clock.ns(r.end_ts),
        "worker_id": f"lane_{t.get('lane', 0)}", "record_processor_id": "harness",
        "benchmark_phase": "profiling" if profiling else "warmup",
        "phase_index": 1 if profiling else 0, "profiling_index": profiling_index,
        "phase_name": "profiling" if profiling else "warmup",
        "phase_kind": "profiling" if profiling else "warmup",
        "was_cancelled": False, "cancellation_time_ns": None, "context_overflow_skip": False,
        "agent_depth": len(path),
        "parent_correlation_id": (t.get("parent_correlation_id") if sent else
                                  "/".join([session, *path[:-1]]) if path else None),
        "root_correlation_id": str(t["root_correlation_id"]) if sent else session,
    }


def record_line(r: RequestRecord, clock: Clock, session_num: int,
                profiling_index: int | None = None) -> dict[str, Any]:
    meta = record_metadata(r, clock, session_num, profiling_index)
    if has_timing(r):
        return {"metadata": meta, "metrics": record_metrics(r), "error": None}
    return {"metadata": meta,
            "metrics": {"error_isl": _metric(r.expected_prompt_tokens, "tokens")},
            "error": _error(r)}


def profile_lines(records: Sequence[RequestRecord], clock: Clock) -> list[dict[str, Any]]:
    sessions: dict[str, int] = {}
    out, profiled = [], 0
    for r in sorted(records, key=lambda r: (r.send_ts if math.isfinite(r.send_ts) else math.inf)):
        n = sessions.setdefault(str(r.tags.get("session", "")), len(sessions))
        idx = profiled if r.phase == PHASE_MEASURED else None
        profiled += r.phase == PHASE_MEASURED
        out.append(record_line(r, clock, n, idx))
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
        "successful_request_count": _single(len(kept), "requests"),
        "error_summary": _error_summary(lines),
        "request_throughput": _single(len(kept) / dur if dur > 0 else None, "requests/sec"),
        "output_token_throughput": _single(osl / dur if dur > 0 else None, "tokens/sec"),
        "total_isl": _single(isl, "tokens"), "total_osl": _single(osl, "tokens"),
        "context_overflow_count": rec.get("num_context_overflow") or 0,
        "metadata": _metadata(rec, cfg), "input_config": input_config(rec, cfg),
    }
    hit = rec.get("theoretical_hit_rate")
    if isinstance(hit, int | float) and math.isfinite(hit):
        # Our rate is hit tokens / prompt tokens of measured requests; written as AIPerf's
        # percentage (no sum/count, which would have to be block counts).
        out["theoretical_prefix_cache_hit"] = {"unit": "%", "avg": 100.0 * hit}
    return out


def _error_summary(lines: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """AIPerf's ErrorDetailsCount list over the profiling records."""
    counts: dict[tuple[Any, str], int] = {}
    for x in lines:
        if x["metadata"]["benchmark_phase"] == "profiling" and x["error"]:
            k = (x["error"]["code"], x["error"]["type"])
            counts[k] = counts.get(k, 0) + 1
    return [{"error_details": {"code": code, "type": kind}, "count": n}
            for (code, kind), n in sorted(counts.items(), key=lambda kv: -kv[1])]


def _metadata(rec: PointRecord, cfg: Mapping[str, Any]) -> dict[str, Any]:
    scen = cfg.get("scenario") or {}
    # No `hf_dataset_name`: InferenceX would then look for the trace in a Hugging Face cache.
    dataset = {"source_type": "harness", "loader": scen.get("trace_format"),
               "trace_files": scen.get("trace_files"), "fit_mode": scen.get("fit_mode")}
    return {"scenario": rec.identity.scenario, "submission_valid": rec.valid,
            "submission_invalid_reasons": list(rec.reasons), "dataset": dataset}


def input_config(rec: PointRecord, cfg: Mapping[str, Any]) -> dict[str, Any]:
    scen = cfg.get("scenario") or {}
    return {"loadgen": {"concurrency": rec.identity.conc,
                        "benchmark_duration": scen.get("duration_s", rec.get("duration_s"))},
            "endpoint": {"model_names": [rec.identity.hf_id or rec.identity.model],
                         "url": (cfg.get("engine") or {}).get("url")}}
