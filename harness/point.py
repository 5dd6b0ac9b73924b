"""One point's record, assembled from what was measured: metrics, engine facts, the workload's
facts, one validity verdict and provenance. Pure: the runner does the I/O around it."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.client_health import ClientHealth
from harness.config.schema import SweepConfig
from harness.engines import prometheus
from harness.engines.base import EngineAdapter
from harness.metrics import GpuCount, point_metrics
from harness.point_record import PointIdentity, PointRecord
from harness.validity import (
    ValiditySettings,
    acceptance_rule,
    client_rules,
    engine_rules,
    judge,
    request_rules,
)
from harness.workloads.base import Measurement, Workload

# Server-side counters worth keeping on the point, by engine family.
_TOKEN_COUNTERS = {
    "server_prompt_tokens": ("vllm:prompt_tokens_total", "llamacpp:prompt_tokens_total",
                             "sglang:prompt_tokens_total"),
    "server_generation_tokens": ("vllm:generation_tokens_total",
                                 "llamacpp:tokens_predicted_total",
                                 "sglang:generation_tokens_total"),
}


@dataclass(frozen=True, slots=True)
class JobContext:
    """What every point of one job shares."""

    sc: SweepConfig
    run_id: str
    job: str
    adapter: EngineAdapter
    workload: Workload
    seed: int
    revision: str
    validity: ValiditySettings
    gpus: GpuCount


@dataclass(frozen=True, slots=True)
class EngineState:
    """How the engine came out of the point."""

    version: str
    alive: bool = True
    hung: bool = False
    failure: str = ""  # why it died or hung, with the log's tail


def engine_facts(adapter: EngineAdapter, before: prometheus.Sample,
                 after: prometheus.Sample) -> dict[str, Any]:
    """Counter deltas over the measured phase, under engine-neutral names."""
    d = prometheus.delta(before, after)
    out: dict[str, Any] = {}
    for key, names in _TOKEN_COUNTERS.items():
        vals = [prometheus.total(d, n) for n in names]
        vals = [v for v in vals if not math.isnan(v)]
        out[key] = vals[0] if vals else None
    out["server_metrics_hit_rate"] = prefix_hit_rate(adapter, d)
    spec = adapter.spec_counters
    if spec is not None:
        drafts = prometheus.total(d, spec.drafts)
        accepted = prometheus.total(d, spec.accepted)
        drafted = prometheus.total(d, spec.draft_tokens)
        out["spec_drafts"] = None if math.isnan(drafts) else drafts
        out["spec_draft_tokens"] = None if math.isnan(drafted) else drafted
        out["spec_accepted_tokens"] = None if math.isnan(accepted) else accepted
        out["spec_realised_al"] = (1.0 + accepted / drafts) if drafts and drafts > 0 else None
    if adapter.spec_al_gauge is not None:
        al = prometheus.total(after, adapter.spec_al_gauge)
        out["spec_realised_al"] = None if math.isnan(al) or al <= 0 else al
    return out


def prefix_hit_rate(adapter: EngineAdapter, d: prometheus.Sample) -> float:
    """Prefix-cache hits over the window from the adapter's declared counters (tokens)."""
    names = adapter.prefix_cache_counters
    if names is None:  # llama.cpp: cached prompt tokens are counted outside prompt_tokens
        h = prometheus.total(d, "llamacpp:prompt_tokens_cached_total")
        q = prometheus.total(d, "llamacpp:prompt_tokens_total")
        return h / (q + h) if not math.isnan(h) and q + h > 0 else math.nan
    q, h = prometheus.total(d, names[0]), prometheus.total(d, names[1])
    return h / q if not math.isnan(h) and q and q > 0 else math.nan


def health_fields(h: ClientHealth) -> dict[str, Any]:
    return {
        "client_bottleneck": h.bottleneck,
        "client_lag_p99_ms": h.lag_p99_ms,
        "client_lag_max_ms": h.lag_max_ms,
        "client_stamp_err_p99_ms": h.stamp_err_p99_ms,
        "client_cpu_share": h.cpu_share,
        "client_inflight_mean": h.inflight_mean,
    }


def chip_fields(sc: SweepConfig) -> dict[str, Any]:
    """The chip's power and prices travel with the point (cost columns need them)."""
    c = sc.chip
    return {
        "chip_tdp_w": c.tdp_w,
        "chip_power_kw_all_in": c.power_kw_all_in,
        "chip_cost_hyperscaler": c.cost_per_gpu_hr.hyperscaler,
        "chip_cost_neocloud": c.cost_per_gpu_hr.neocloud,
        "chip_cost_rental_3yr": c.cost_per_gpu_hr.rental_3yr,
    }


def assemble(ctx: JobContext, identity: PointIdentity, meas: Measurement, engine: EngineState,
             started: str, finished: str) -> PointRecord:
    """The point's record: every metric, every rule's verdict, where everything came from."""
    m = point_metrics(meas.measured.records, meas.measured.duration_s, ctx.gpus)
    facts = ctx.workload.facts(meas, m)
    eng = engine_facts(ctx.adapter, meas.server_before, meas.server_after)
    health = health_fields(meas.measured.health)
    plan = ctx.adapter.acceptance
    realised = eng.get("spec_realised_al")
    if plan.mode == "injected" and plan.length and realised is not None:
        eng["spec_al_error"] = realised / plan.length - 1.0
    observed: Mapping[str, Any] = {**m, **facts}
    verdict = judge(
        engine_rules(engine.alive, engine.hung, engine.failure),
        request_rules(m, ctx.validity),
        client_rules(health, ctx.validity),
        ctx.workload.rules(observed, ctx.validity),
        acceptance_rule(plan.mode, plan.length, realised, ctx.validity.al_tolerance),
    )
    values = {**m, **facts, **health, **eng}
    return PointRecord(
        point_id=identity.point_id(), run_id=ctx.run_id, identity=identity,
        status="failed" if verdict.fatal else "ok", validity=verdict,
        metrics={k: v for k, v in values.items() if _is_metric(k)},
        chip=chip_fields(ctx.sc),
        provenance={"job": ctx.job, "engine_version": engine.version, "seed": ctx.seed,
                    "harness_revision": ctx.revision, "started_at": started,
                    "finished_at": finished, "measured_start_wall": meas.measured.start_wall},
        extras={**{k: v for k, v in values.items() if not _is_metric(k)},
                **plan.fields()},
    )


def _is_metric(key: str) -> bool:
    from harness.metrics import CATALOGUE

    return key in CATALOGUE


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
