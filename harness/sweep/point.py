"""One point's record, assembled from what was measured: metrics, engine facts, the workload's
facts, one validity verdict and provenance. Pure: the runner does the I/O around it."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.config.schema import SweepConfig
from harness.engines import counters, prometheus, server_cache
from harness.engines.base import EngineAdapter
from harness.engines.sampler import Sampled
from harness.record import energy
from harness.record.bench_rules import bench_rules
from harness.record.chip_costs import ChipCosts
from harness.record.goodput import Slo, goodput_metrics
from harness.record.metrics import GpuCount, point_metrics
from harness.record.point_record import PointIdentity, PointRecord
from harness.record.spec_names import speculator_name
from harness.record.validity import (
    Rule,
    ValiditySettings,
    acceptance_rule,
    client_rules,
    engine_rules,
    judge,
    request_rules,
    speculation_rule,
)
from harness.speculation.acceptance import synthetic_rates
from harness.speculation.truncation import truncated_al
from harness.telemetry import NOT_SET, Choice
from harness.workloads.base import Measurement, Workload


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
    telemetry: Choice = NOT_SET
    body: Mapping[str, Any] | None = None  # fields every request carries (later prepares)


@dataclass(frozen=True, slots=True)
class EngineState:
    """How the engine came out of the point."""

    version: str
    alive: bool = True
    hung: bool = False
    failure: str = ""  # why it died or hung, with the log's tail


def engine_facts(adapter: EngineAdapter, before: prometheus.Sample, after: prometheus.Sample,
                 samples: Sampled = (), concurrency: int = 1,
                 decode_tokens: Sequence[int] = ()) -> dict[str, Any]:
    """What the engine's own metrics say about the measured window, under engine-neutral
    names, read through the counters the adapter declares (harness.engines.counters).
    `decode_tokens`: each measured request's output tokens less the one prefill emits."""
    c = adapter.counters
    tok = counters.token_deltas(c, before, after)
    out: dict[str, Any] = {
        "server_prompt_tokens": tok.prompt, "server_generation_tokens": tok.generation,
        "server_cached_tokens": tok.cached,
        "server_metrics_hit_rate": counters.prefix_hit_rate(c, before, after),
        **server_cache.server_cache_facts(c, before, after, samples),
    }
    if adapter.sc.speculator.method == "none":
        return out
    r = counters.realised_acceptance(c, before, after, samples, k=adapter.sc.speculator.k)
    out.update({
        "spec_realised_al": r.al, "spec_drafts": r.drafts, "spec_draft_tokens": r.draft_tokens,
        "spec_accepted_tokens": r.accepted_tokens, "spec_al_source": r.source,
        "spec_al_per_rank": r.per_rank or None, "spec_al_note": r.reason or None,
    })
    # Independent accepted-count draws: SGLang draws once per batch step, not per request.
    dp = adapter.sc.topology.tp if adapter.sc.topology.dp_attention else 1
    mean_batch = max(1.0, concurrency / dp)
    out["spec_independent_draws"] = counters.independent_draws(c, r, mean_batch)
    out["spec_expected_al"] = expected_al(adapter, r, decode_tokens)
    return out


def expected_al(adapter: EngineAdapter, r: counters.RealisedAcceptance,
                decode_tokens: Sequence[int]) -> float | None:
    """What an injected point's AL metric reads when the engine applied the injection, where
    that differs from the requested AL: SGLang counts only the tokens a request's finishing
    step kept (harness.speculation.truncation), which on AgentX's short replies reads ~10% low."""
    plan = adapter.acceptance
    if plan.mode != "injected" or not plan.length or not r.truncated_at_finish:
        return None
    k = adapter.sc.speculator.k
    return truncated_al(synthetic_rates(min(plan.length, k + 1.0), k), decode_tokens)


@dataclass(frozen=True, slots=True)
class PowerMeasurement:
    """What the point's telemetry gave: its source ('none': nothing sampled), why (no tool, a
    sampler's errors), and the integration over the measured window (None: not sampled)."""

    source: str
    note: str = ""
    integration: energy.PowerIntegration | None = None


def power_facts(p: PowerMeasurement | None, m: Mapping[str, Any]) -> dict[str, Any]:
    """Measured-energy figures and their validity (harness/record/energy.py): the figures only when
    valid; an invalid or absent measurement never fails the point (InferenceX: best-effort)."""
    if p is None or p.integration is None:
        source = p.source if p else "none"
        reason = (p.note if p else "") or "telemetry not sampled"
        return {"power_valid": 0, "power_source": source, "power_reasons": [reason]}
    figures = energy.energy_figures(p.integration, int(m.get("total_input_tokens") or 0),
                                    int(m.get("total_output_tokens") or 0),
                                    int(m.get("num_completed") or 0))
    reasons = list(p.integration.reasons)
    if p.integration.power_valid and not figures:
        reasons.append("no_positive_energy")
    return {"power_valid": int(bool(figures)), "power_source": p.source,
            "power_reasons": reasons, "power_note": p.note or None, **figures}


def power_rule(facts: Mapping[str, Any], required: bool) -> list[Rule]:
    """`telemetry.require_power` (InferenceX's REQUIRE_POWER, off by default there too): an
    invalid power measurement makes the point invalid; it is kept, never failed."""
    if not required:
        return []
    ok = bool(facts.get("power_valid"))
    why = ", ".join(facts.get("power_reasons") or [])
    return [Rule("power_valid", ok, facts.get("power_valid"), "valid telemetry over the window",
                 "power measured" if ok else f"power not measured validly ({why})",
                 "see power/<point_id>.json and docs/energy.md")]


def chip_fields(sc: SweepConfig) -> dict[str, Any]:
    """The chip's power and prices travel with the point (cost columns need them)."""
    return ChipCosts.of(sc.chip).columns()


def assemble(ctx: JobContext, identity: PointIdentity, meas: Measurement, engine: EngineState,
             started: str, finished: str, samples: Sampled = (),
             power: PowerMeasurement | None = None,
             series_figures: Mapping[str, float] | None = None,
             host_figures: Mapping[str, Any] | None = None) -> PointRecord:
    """The point's record: every metric, every rule's verdict, where everything came from.
    `samples`: the server's metrics scraped through the measured window; `power` the
    accelerator telemetry's integration; `series_figures` harness.sweep.series.summary."""
    m = point_metrics(meas.measured.records, meas.measured.duration_s, ctx.gpus,
                      drop_zero_tpot=ctx.workload.drops_zero_tpot)
    slo = slo_of(ctx.sc)
    m.update(goodput_metrics(meas.measured.records, meas.measured.duration_s, slo))
    facts = ctx.workload.facts(meas, m, samples)
    decode = [r.completion_tokens - 1 for r in meas.measured.records
              if r.ok and r.completion_tokens > 1]
    eng = engine_facts(ctx.adapter, meas.server_before, meas.server_after, samples,
                       identity.conc, decode)
    health = meas.measured.health.fields()
    plan = ctx.adapter.acceptance
    realised, expected = _with_al_error(plan, eng)
    observed: Mapping[str, Any] = {**m, **facts}
    pwr = power_facts(power, m)
    hf = dict(host_figures or {})  # harness.telemetry.host.point_figures
    bench, marks = bench_rules(hf, m, ctx.workload.traits(), ctx.validity, meas.measured.records,
                               ctx.sc.speculator.method != "none", meas.measured.start_ts)
    verdict = judge(
        bench,
        engine_rules(engine.alive, engine.hung, engine.failure),
        request_rules(m, ctx.validity),
        client_rules(health, ctx.validity),
        ctx.workload.rules(observed, ctx.validity),
        acceptance_rule(plan.mode, plan.length, realised, eng.get("spec_independent_draws"),
                        ctx.sc.speculator.k, ctx.validity, eng.get("spec_al_note"), expected),
        power_rule(pwr, ctx.sc.telemetry.require_power),
        speculation_rule(ctx.sc.speculator.method, plan.mode, ctx.sc.speculator.k, realised,
                         eng.get("spec_al_note"), ctx.sc.speculator.unverified_ok),
    )
    if ctx.sc.speculator.method != "none" and realised is None \
            and ctx.sc.speculator.unverified_ok:
        eng["spec_unverified_ok"] = True  # shown on the point and its page
    # Chunks carry up to this many tokens (the engine's --stream-interval): ITL is per chunk.
    values = {**m, **facts, **health, **eng,
              "stream_interval": getattr(ctx.adapter, "stream_interval", 1),
              **pwr, **(series_figures or {}), **slo.fields(), **hf, **marks}
    return PointRecord(
        point_id=identity.point_id(), run_id=ctx.run_id, identity=identity,
        status="failed" if verdict.fatal else "ok", validity=verdict,
        metrics={k: v for k, v in values.items() if _is_metric(k)},
        chip=chip_fields(ctx.sc),
        provenance={"job": ctx.job, "engine_version": engine.version, "seed": ctx.seed,
                    "harness_revision": ctx.revision, "started_at": started,
                    "finished_at": finished, "measured_start_wall": meas.measured.start_wall},
        extras={**{k: v for k, v in values.items() if not _is_metric(k)},
                **plan.fields(),
                # the speculator's own name (self_draft, not the engine's draft_model)
                "spec_name": speculator_name(ctx.sc.speculator.method,
                                             ctx.sc.speculator.draft_model),
                "spec_draft_model": ctx.sc.speculator.draft_model},
    )


def _with_al_error(plan: Any, eng: dict[str, Any]) -> tuple[Any, Any]:
    """The realised and expected AL; an injected point also gets how far the engine realised
    it from what was asked (`spec_al_error`)."""
    realised, expected = eng.get("spec_realised_al"), eng.get("spec_expected_al")
    if plan.mode == "injected" and plan.length and realised is not None:
        eng["spec_al_error"] = realised / (expected or plan.length) - 1.0
    return realised, expected


def slo_of(sc: SweepConfig) -> Slo:
    return Slo(sc.slo.ttft_ms, sc.slo.tpot_ms, sc.slo.e2el_ms)


def _is_metric(key: str) -> bool:
    from harness.record.metrics import CATALOGUE

    return key in CATALOGUE


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
