"""A point's time series in long format (docs/series.md): one row per (t, source, device, name,
value), `t_s` seconds since the point's measured start (negative: warmup).

    server  the /metrics scrapes (engines/sampler.py) under engine-neutral names
    client  in flight (exact, from the records), send rate and loop lag (worst) in 1 s bins
    gpu     accelerator telemetry, per device (harness.telemetry)

Building is pure; `parquet_bytes` serialises for the runner to write atomically.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.engines import counters
from harness.engines.prometheus import Sample
from harness.records import RequestRecord
from harness.telemetry.base import GpuReading

SCHEMA = pa.schema([("t_s", pa.float64()), ("source", pa.string()), ("device", pa.string()),
                    ("name", pa.string()), ("value", pa.float64())])
Row = tuple[float, str, str, str, float]
SEND_RATE_BIN_S = 1.0
LAG_BIN_S = 1.0

# Running and waiting requests per engine kind. llama.cpp: read from its /metrics
# (ggml-org/llama.cpp:tools/server/server-task.cpp@17f5f8a8, to_metrics); SGLang, ATOM and
# TensorRT-LLM: docs/upstream/inferencex.md §5-6; vLLM: vllm/v1/metrics/loggers.py (the
# engine emulator renders the same names).
QUEUE_GAUGES: dict[str, tuple[str, str]] = {
    "llamacpp": ("llamacpp:requests_processing", "llamacpp:requests_deferred"),
    "vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs"),
    "trtllm": ("trtllm_num_requests_running", "trtllm_num_requests_waiting"),
    "atom": ("atom:requests_running", "atom:requests_waiting"),
}


def _gauge_values(sample: Mapping[str, float], name: str) -> list[float]:
    """Every label set of metric `name` in one scrape."""
    return [v for k, v in sample.items()
            if (k == name or k.startswith(name + "{")) and math.isfinite(v)]


def _counter_series(c: Any) -> dict[str, Any]:
    """Neutral name -> the adapter's declared Series, for what its counters declare."""
    out: dict[str, Any] = {}
    tok, spec = c.tokens, c.spec
    if tok is not None:
        out.update({"prompt_tokens_total": tok.prompt, "generation_tokens_total": tok.generation,
                    "cached_tokens_total": tok.cached})
    if spec is not None:
        out.update({"spec_drafts_total": spec.drafts, "spec_accepted_total": spec.accepted,
                    "spec_draft_tokens_total": spec.draft_tokens})
    return {k: s for k, s in out.items() if s is not None}


def server_rows(c: Any, samples: Sequence[tuple[float, Sample]], t0: float) -> list[Row]:
    """The scrapes as rows: queue gauges (summed over ranks), KV usage (max over ranks, as
    AgentX aggregates it), the declared counters (cumulative, summed) and the AL gauge."""
    if not samples:
        return []
    c = counters.resolve(c, samples[-1][1]) or c
    running, waiting = QUEUE_GAUGES.get(c.kind, ("", ""))
    kv = tuple(getattr(getattr(c, "cache", None), "kv_usage", ()) or ())
    declared = _counter_series(c)
    out: list[Row] = []
    for t, s in samples:
        ts = t - t0
        for name, metric in (("num_requests_running", running),
                             ("num_requests_waiting", waiting)):
            vals = _gauge_values(s, metric) if metric else []
            if vals:
                out.append((ts, "server", "", name, float(sum(vals))))
        kv_vals = [v for series in kv for v in series.by_labels(s).values()]
        if kv_vals:
            out.append((ts, "server", "", "kv_usage", float(max(kv_vals))))
        for name, series in declared.items():
            total = series.total(s)
            if total is not None:
                out.append((ts, "server", "", name, total))
        # hits and queried tokens by the engine's own semantics (llama.cpp's queries counter
        # leaves the hits out): their ratio is a ratio on every engine
        hits, queries = counters.prefix_counts(c, s)
        if hits is not None and queries is not None:
            out += [(ts, "server", "", "prefix_hits_total", hits),
                    (ts, "server", "", "prefix_queries_total", queries)]
        if c.al_gauge is not None:
            al = _gauge_values(s, c.al_gauge.name)
            if al:
                out.append((ts, "server", "", "spec_al_gauge", sum(al) / len(al)))
    return out


def _span(r: RequestRecord) -> tuple[float, float] | None:
    start = r.send_ts if math.isfinite(r.send_ts) else r.issue_ts
    end = r.end_ts if math.isfinite(r.end_ts) else r.last_token_ts
    if not (math.isfinite(start) and math.isfinite(end)):
        return None
    return start, max(start, end)


def client_rows(records: Iterable[RequestRecord], t0: float,
                lag_samples: Sequence[tuple[float, float]] = ()) -> list[Row]:
    """In flight at every change (a step function: the value holds until the next row), sends
    per second in bins from the measured start, and the loop-lag probe's worst per second."""
    spans = [s for s in map(_span, records) if s is not None]
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans],
                    key=lambda e: (e[0], e[1]))  # an end before a send at the same instant
    out: list[Row] = []
    level = 0
    for i, (t, step) in enumerate(events):
        level += step
        if i + 1 == len(events) or events[i + 1][0] != t:
            out.append((t - t0, "client", "", "inflight", float(level)))
    bins: dict[int, int] = {}
    for a, _ in spans:
        k = math.floor((a - t0) / SEND_RATE_BIN_S)
        bins[k] = bins.get(k, 0) + 1
    if bins:
        for k in range(min(bins), max(bins) + 1):
            out.append((k * SEND_RATE_BIN_S, "client", "", "send_rate",
                        bins.get(k, 0) / SEND_RATE_BIN_S))
    out += lag_rows(lag_samples, t0)
    return out


def lag_rows(lag_samples: Sequence[tuple[float, float]], t0: float) -> list[Row]:
    """The loop-lag probe's readings (one per 5 ms) as the worst of each 1 s bin, stamped at
    the bin's start: the stalls that matter survive, at the server series' cadence."""
    worst: dict[int, float] = {}
    for t, ms in lag_samples:
        k = math.floor((t - t0) / LAG_BIN_S)
        worst[k] = max(worst.get(k, -math.inf), float(ms))
    return [(k * LAG_BIN_S, "client", "", "loop_lag_ms", v) for k, v in sorted(worst.items())]


def gpu_rows(readings: Iterable[GpuReading], t0: float) -> list[Row]:
    out: list[Row] = []
    for r in readings:
        for name, v in (("power_w", r.power_w), ("util_pct", r.util_pct),
                        ("mem_used_mib", r.mem_used_mib)):
            if v is not None and math.isfinite(v):
                out.append((r.t - t0, "gpu", r.device, name, float(v)))
    return out


def table(rows: Iterable[Row]) -> pa.Table:
    """Rows as the series table, ordered by source, device, name, time."""
    ordered = sorted(rows, key=lambda r: (r[1], r[2], r[3], r[0]))
    cols = list(zip(*ordered, strict=True)) if ordered else [[], [], [], [], []]
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, SCHEMA,
                                                                          strict=True)],
                                schema=SCHEMA)


def parquet_bytes(t: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="zstd")
    return buf.getvalue()


def summary(rows: Sequence[Row], window_s: float) -> dict[str, float]:
    """Figures of the measured window (0 <= t_s <= window_s); a key is absent when its series
    is (harness/catalogue/series.py)."""
    def values(source: str, name: str) -> list[float]:
        return [r[4] for r in rows
                if r[1] == source and r[3] == name and 0.0 <= r[0] <= window_s]

    out: dict[str, float] = {}
    for key, source, name, agg in (
            ("series_running_mean", "server", "num_requests_running", "mean"),
            ("series_waiting_max", "server", "num_requests_waiting", "max"),
            ("series_kv_usage_max", "server", "kv_usage", "max"),
            ("series_gpu_util_mean", "gpu", "util_pct", "mean"),
            ("series_gpu_mem_max_mib", "gpu", "mem_used_mib", "max")):
        v = values(source, name)
        if v:
            out[key] = max(v) if agg == "max" else sum(v) / len(v)
    return out
