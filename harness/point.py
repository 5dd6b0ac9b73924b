"""One point: measure it on a running engine, judge its validity, assemble its record."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.client import (
    ClientSettings,
    PhaseResult,
    StreamingClient,
    run_async,
    run_closed_loop,
)
from harness.client_health import ClientHealth
from harness.engines import prometheus
from harness.metrics import GpuCount, point_metrics
from harness.records import RequestRecord, RequestSpec

# Server-side counters worth keeping on the point, by engine family.
_TOKEN_COUNTERS = {
    "server_prompt_tokens": ("vllm:prompt_tokens_total", "llamacpp:prompt_tokens_total",
                             "sglang:prompt_tokens_total"),
    "server_generation_tokens": ("vllm:generation_tokens_total",
                                 "llamacpp:tokens_predicted_total",
                                 "sglang:generation_tokens_total"),
}


@dataclass
class Measurement:
    warmup: PhaseResult
    measured: PhaseResult
    server_before: prometheus.Sample
    server_after: prometheus.Sample
    extra: dict[str, Any] = field(default_factory=dict)  # workload-specific facts

    @property
    def records(self) -> list[RequestRecord]:
        return self.warmup.records + self.measured.records


def measure_fixed(
    base_url: str,
    settings: ClientSettings,
    warmup: list[RequestSpec],
    measured: list[RequestSpec],
    concurrency: int,
    scrape: Callable[[], prometheus.Sample],
    on_done: Callable[[RequestRecord], None] | None = None,
) -> Measurement:
    """Warmup (excluded from every metric), a /metrics scrape, the measured phase, a scrape."""
    settings = ClientSettings(**{**asdict(settings), "base_url": base_url})

    async def phase(specs: list[RequestSpec]) -> PhaseResult:
        async with StreamingClient(settings) as client:
            return await run_closed_loop(client, specs, concurrency, on_done)

    warm = run_async(phase(warmup))
    before = scrape()
    meas = run_async(phase(measured))
    after = scrape()
    return Measurement(warm, meas, before, after)


def server_summary(before: prometheus.Sample, after: prometheus.Sample,
                   spec_names: Any | None, spec_al_gauge: str | None = None) -> dict[str, Any]:
    """Counter deltas over the measured phase, under engine-neutral names."""
    d = prometheus.delta(before, after)
    out: dict[str, Any] = {}
    for key, names in _TOKEN_COUNTERS.items():
        vals = [prometheus.total(d, n) for n in names]
        vals = [v for v in vals if not math.isnan(v)]
        out[key] = vals[0] if vals else None
    if spec_names is not None:
        drafts = prometheus.total(d, spec_names.drafts)
        accepted = prometheus.total(d, spec_names.accepted)
        drafted = prometheus.total(d, spec_names.draft_tokens)
        out["spec_drafts"] = None if math.isnan(drafts) else drafts
        out["spec_draft_tokens"] = None if math.isnan(drafted) else drafted
        out["spec_accepted_tokens"] = None if math.isnan(accepted) else accepted
        out["spec_realised_al"] = (1.0 + accepted / drafts) if drafts and drafts > 0 else None
    if spec_al_gauge is not None:
        al = prometheus.total(after, spec_al_gauge)
        out["spec_realised_al"] = None if math.isnan(al) or al <= 0 else al
    return out


def validity(
    m: dict[str, Any], health: ClientHealth, min_success: float
) -> list[str]:
    """Why a point cannot be trusted, each reason with what to do about it. Empty = valid."""
    reasons: list[str] = []
    n, failed = int(m["num_requests"]), int(m["num_failed"])
    if n == 0:
        return ["no measured requests"]
    if failed > (1.0 - min_success) * n:
        reasons.append(
            f"{failed} of {n} requests failed (more than {100 * (1 - min_success):.0f}%); "
            "see the error column of the point's requests Parquet"
        )
    if health.bottleneck:
        reasons.append("client was the bottleneck: " + "; ".join(health.reasons)
                       + " - lower concurrency or run the client on a separate, idle core")
    if m["num_prompt_mismatch"]:
        reasons.append(
            f"{m['num_prompt_mismatch']} requests: the server counted a different prompt length "
            "than was built (tokenizer or chat template differs from the server's)"
        )
    if m["num_usage_missing"]:
        reasons.append(
            f"{m['num_usage_missing']} requests without usage in the stream: output tokens were "
            "counted from chunks (server lacks stream_options.include_usage)"
        )
    if m["num_short_output"]:
        reasons.append(
            f"{m['num_short_output']} requests stopped before max_tokens although ignore_eos was "
            "set (context full, or the server ignores ignore_eos)"
        )
    return reasons


def metrics_of(meas: Measurement, gpus: GpuCount) -> dict[str, Any]:
    return point_metrics(meas.measured.records, meas.measured.duration_s, gpus)


def health_fields(h: ClientHealth) -> dict[str, Any]:
    return {
        "client_bottleneck": h.bottleneck,
        "client_lag_p99_ms": h.lag_p99_ms,
        "client_lag_max_ms": h.lag_max_ms,
        "client_stamp_err_p99_ms": h.stamp_err_p99_ms,
        "client_cpu_share": h.cpu_share,
        "client_inflight_mean": h.inflight_mean,
    }


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
