"""One sweep job: a recipe served by one engine launch, every concurrency point on it.

Order matters: everything that can fail on bad input (config, weights, tokenizer, prompts,
traces) runs before the engine starts; each point's results are on disk before the next point
begins; a server that dies mid-point fails that point, is restarted, and the sweep goes on.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from harness import agentic
from harness.client import STALL_ERROR, ClientSettings
from harness.config.schema import SweepConfig
from harness.config.validate import gpus_of
from harness.engines.base import EngineAdapter
from harness.engines.registry import make_adapter
from harness.engines.session import EngineSession
from harness.identity import point_id, point_identity
from harness.metrics import GpuCount
from harness.point import (
    Measurement,
    health_fields,
    measure_fixed,
    metrics_of,
    now_iso,
    server_summary,
    validity,
)
from harness.report import print_summary
from harness.results import RunDir, git_revision
from harness.spec import acceptance
from harness.spec.acceptance import AcceptancePlan
from harness.workloads.fixed_seq import (
    FixedPointRequests,
    PromptBuilder,
    build_fixed_point,
    stream_body,
)
from harness.workloads.tokenizer import load_tokenizer

log = logging.getLogger(__name__)


@dataclass
class PlannedPoint:
    identity: dict[str, Any]
    point_id: str
    concurrency: int
    repeat: int
    requests: FixedPointRequests | None = None


@dataclass
class Job:
    """What every point of a job shares."""

    sc: SweepConfig
    run: RunDir
    name: str
    adapter: EngineAdapter
    settings: ClientSettings
    seed: int
    revision: str
    body: dict[str, Any]
    agentic_plan: agentic.AgenticPlan | None = None


def run_seed(sc: SweepConfig) -> int:
    """The run's seed: given, or derived from the run id (runs never share prompts; a resumed
    run rebuilds the same ones)."""
    if sc.seed is not None:
        return int(sc.seed)
    return int.from_bytes(hashlib.sha256(sc.run_id.encode()).digest()[:4], "little")


def plan_points(sc: SweepConfig, acceptance: AcceptancePlan | None = None
                ) -> list[PlannedPoint]:
    out = []
    for rep in range(sc.repeats):
        for c in sc.concurrency:
            ident = point_identity(sc, c, rep, acceptance)
            out.append(PlannedPoint(ident, point_id(ident), c, rep))
    return out


def _fixed_requests(job: Job, todo: list[PlannedPoint], tokenizer: Any) -> None:
    """Every prompt of every pending point, encoded before the engine starts."""
    sc = job.sc
    scen = sc.scenario
    chat_template = scen.chat_template
    if chat_template is None:  # speculative points run real acceptance on templated text
        chat_template = sc.speculator.method != "none"
    builder = PromptBuilder.for_tokenizer(tokenizer, scen.api, chat_template)
    total = sum((scen.warmup_per_conc + scen.requests_per_conc) * p.concurrency for p in todo)
    with tqdm(total=total, desc="building prompts", unit="req", leave=False) as bar:
        for p in todo:
            rng = np.random.default_rng([job.seed, p.concurrency, p.repeat, 0xF1])
            p.requests = build_fixed_point(scen, p.concurrency, builder, rng, job.body,
                                           id_prefix=p.point_id, progress=bar.update)


def run_job(sc: SweepConfig, run: RunDir, name: str, repo: Path,
            where: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
    """Run every pending point of one recipe. Returns the point records written."""
    adapter = make_adapter(sc)
    locate = where or (lambda key: f"the {key.split('.')[0]} recipe")
    adapter.acceptance = acceptance.resolve(sc, adapter.can_inject,
                                            locate("speculator.acceptance.mode"))
    planned = plan_points(sc, adapter.acceptance)
    done = set() if sc.fresh else run.completed_ids()
    todo = [p for p in planned if p.point_id not in done]
    if len(todo) < len(planned):
        print(f"resuming: {len(planned) - len(todo)} of {len(planned)} points already complete")
    if not todo:
        return []
    settings = ClientSettings(
        base_url="", timeout_s=sc.client.timeout_s, stall_timeout_s=sc.client.stall_timeout_s,
        api_key_env=sc.engine.api_key_env,
        strict_sse=sc.client.strict_sse, max_stamp_err_ms=sc.client.max_stamp_err_ms,
        max_cpu_share=sc.client.max_cpu_share, keep_alive=adapter.keep_alive,
    )
    body = stream_body(adapter.served_model_name, dict(sc.scenario.sampling),
                       adapter.request_extras())
    job = Job(sc, run, name, adapter, settings, run_seed(sc), git_revision(repo), body)
    tokenizer = load_tokenizer(sc.model)
    if sc.scenario.kind == "agentic":
        job.agentic_plan = agentic.prepare(sc, tokenizer, repo, job.seed)
        adapter.request_tokens_override = job.agentic_plan.max_request_tokens
    else:
        _fixed_requests(job, todo, tokenizer)
    written: list[dict[str, Any]] = []
    with EngineSession(adapter, run.root, name, max(sc.concurrency)) as eng:
        print(f"engine ready: {eng.version} at {eng.base_url}")
        for p in todo:
            record = _run_point(job, eng, p)
            run.append_point(record)
            written.append(record)
            if record["status"] == "failed" and eng.launches_engine:
                print(f"engine failed during {p.point_id} ({record['invalid_reasons'][0]}"
                      .splitlines()[0] + "); restarting it")
                eng.restart()
    print_summary(written)
    return written


def _measure(job: Job, eng: EngineSession, p: PlannedPoint, bar: tqdm) -> Measurement:
    def tick(_: object) -> None:
        bar.update(1)

    if job.agentic_plan is not None:
        return agentic.measure_agentic(job.agentic_plan, job.sc, eng.base_url, job.settings,
                                       p.concurrency, job.body, job.seed + p.repeat,
                                       p.point_id, eng.scrape, on_done=tick)
    assert p.requests is not None
    return measure_fixed(eng.base_url, job.settings, p.requests.warmup, p.requests.measured,
                         p.concurrency, eng.scrape, on_done=tick)


def _run_point(job: Job, eng: EngineSession, p: PlannedPoint) -> dict[str, Any]:
    sc = job.sc
    started = now_iso()
    total = None
    if p.requests is not None:
        total = len(p.requests.warmup) + len(p.requests.measured)
    with tqdm(total=total, desc=f"conc {p.concurrency:>4}", unit="req") as bar:
        meas = _measure(job, eng, p, bar)
    job.run.write_requests(p.point_id, meas.records)
    job.run.write_json(f"server_metrics/{p.point_id}.json",
                       {"before": meas.server_before, "after": meas.server_after})
    m = metrics_of(meas, GpuCount(gpus_of(sc)))
    health = meas.measured.health
    is_agentic = job.agentic_plan is not None
    min_success = 1 - sc.scenario.max_failed_share if is_agentic else sc.scenario.min_success
    reasons = validity(m, health, min_success)
    extra: dict[str, Any] = dict(meas.extra)
    if job.agentic_plan is not None:
        reasons += agentic.agentic_validity(m, meas.records, sc.scenario)
        extra.update(agentic.replayed_hit_rates(meas.records))
        extra["server_metrics_hit_rate"] = agentic.server_metrics_hit_rate(
            meas.server_before, meas.server_after)
        extra["fit"] = job.agentic_plan.fit.describe()
        extra["qps"] = m["request_tput"]
    spec = server_summary(meas.server_before, meas.server_after, job.adapter.spec_counters,
                          job.adapter.spec_al_gauge)
    al_error, al_reasons = acceptance_verdict(job.adapter.acceptance, spec,
                                              sc.speculator.acceptance.tolerance)
    if al_error is not None:
        spec["spec_al_error"] = al_error
    reasons += al_reasons
    status = "ok"
    if not eng.alive():
        status = "failed"
        reasons.insert(0, eng.failure_reason())
    elif hung(meas.measured.records):
        status = "failed"
        reasons.insert(0, eng.hang_reason(sc.client.stall_timeout_s))
    return {
        "point_id": p.point_id,
        "run_id": sc.run_id,
        "job": job.name,
        **p.identity,
        "engine_version": eng.version,
        **chip_fields(sc),
        "status": status,
        "valid": not reasons,
        "invalid_reasons": reasons,
        "seed": job.seed,
        "harness_revision": job.revision,
        "started_at": started,
        "finished_at": now_iso(),
        "measured_start_wall": meas.measured.start_wall,
        **m,
        **extra,
        **health_fields(health),
        **job.adapter.acceptance.fields(),
        **spec,
    }


def hung(records: list) -> bool:
    """Most requests of the point stalled (the client's per-read timeout): the server is alive
    but no longer answering."""
    stalled = sum(1 for r in records if r.error.startswith(STALL_ERROR))
    return bool(records) and stalled * 2 >= len(records)


def acceptance_verdict(plan: AcceptancePlan, spec: dict[str, Any], tolerance: float
                       ) -> tuple[float | None, list[str]]:
    """An injected point must realise the requested AL (from the engine's own counters).
    Returns the relative error (None when there is nothing to compare) and the reasons the
    point is invalid."""
    if plan.mode != "injected" or plan.length is None:
        return None, []
    realised = spec.get("spec_realised_al")
    if realised is None:
        return None, ["injected acceptance could not be verified: the engine reported no "
                      "speculative counters over the point"]
    err = realised / plan.length - 1.0
    if abs(err) > tolerance:
        return err, [f"realised AL {realised:.3f} is {100 * err:+.1f}% off the requested "
                     f"{plan.length:g} (tolerance {100 * tolerance:g}%)"]
    return err, []


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
