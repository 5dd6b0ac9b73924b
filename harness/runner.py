"""One sweep job: a recipe served by one engine launch, every concurrency point on it.

Order matters: everything that can fail on bad input (config, weights, tokenizer, prompts) runs
before the engine starts; each point's results are on disk before the next point begins; a
server that dies mid-point fails that point, is restarted, and the sweep goes on.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from harness.client import ClientSettings
from harness.config.schema import SweepConfig
from harness.config.validate import gpus_of
from harness.engines.base import EngineAdapter
from harness.engines.registry import make_adapter
from harness.engines.session import EngineSession
from harness.identity import point_id, point_identity
from harness.metrics import GpuCount
from harness.point import (
    health_fields,
    measure_fixed,
    metrics_of,
    now_iso,
    server_summary,
    validity,
)
from harness.report import print_summary
from harness.results import RunDir, git_revision
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
    extra: dict[str, Any] = field(default_factory=dict)


def run_seed(sc: SweepConfig) -> int:
    """The run's seed: given, or derived from the run id (runs never share prompts; a resumed
    run rebuilds the same ones)."""
    if sc.seed is not None:
        return int(sc.seed)
    return int.from_bytes(hashlib.sha256(sc.run_id.encode()).digest()[:4], "little")


def plan_points(sc: SweepConfig) -> list[PlannedPoint]:
    out = []
    for rep in range(sc.repeats):
        for c in sc.concurrency:
            ident = point_identity(sc, c, rep)
            out.append(PlannedPoint(ident, point_id(ident), c, rep))
    return out


def _point_rng(seed: int, p: PlannedPoint) -> np.random.Generator:
    return np.random.default_rng([seed, p.concurrency, p.repeat, 0xF1])


def build_requests(sc: SweepConfig, adapter: EngineAdapter, todo: list[PlannedPoint],
                   seed: int) -> None:
    """Every prompt of every pending point, encoded before the engine starts."""
    scen = sc.scenario
    tokenizer = load_tokenizer(sc.model)
    chat_template = scen.chat_template
    if chat_template is None:  # speculative points run real acceptance on templated text
        chat_template = sc.speculator.method != "none"
    builder = PromptBuilder.for_tokenizer(tokenizer, scen.api, chat_template)
    body = stream_body(adapter.served_model_name, dict(scen.sampling), adapter.request_extras())
    total = sum((scen.warmup_per_conc + scen.requests_per_conc) * p.concurrency for p in todo)
    with tqdm(total=total, desc="building prompts", unit="req", leave=False) as bar:
        for p in todo:
            p.requests = build_fixed_point(
                scen, p.concurrency, builder, _point_rng(seed, p), body,
                id_prefix=p.point_id, progress=bar.update,
            )


def run_job(sc: SweepConfig, run: RunDir, job: str, repo: Path) -> list[dict[str, Any]]:
    """Run every pending point of one recipe. Returns the point records written."""
    if sc.scenario.kind != "fixed":
        raise NotImplementedError(f"scenario kind {sc.scenario.kind!r} is not runnable yet")
    adapter = make_adapter(sc)
    seed = run_seed(sc)
    planned = plan_points(sc)
    done = set() if sc.fresh else run.completed_ids()
    todo = [p for p in planned if p.point_id not in done]
    if len(todo) < len(planned):
        print(f"resuming: {len(planned) - len(todo)} of {len(planned)} points already complete")
    if not todo:
        return []
    build_requests(sc, adapter, todo, seed)
    settings = ClientSettings(
        base_url="", timeout_s=sc.client.timeout_s, api_key_env=sc.engine.api_key_env,
        strict_sse=sc.client.strict_sse, max_stamp_err_ms=sc.client.max_stamp_err_ms,
        max_cpu_share=sc.client.max_cpu_share, keep_alive=adapter.keep_alive,
    )
    revision = git_revision(repo)
    written: list[dict[str, Any]] = []
    launch_id = f"{job}-{adapter.kind}"
    with EngineSession(adapter, run.root, launch_id, max(sc.concurrency)) as engine:
        print(f"engine ready: {engine.version} at {engine.base_url}")
        for p in todo:
            record = _run_point(sc, run, engine, adapter, p, settings, seed, revision, job)
            run.append_point(record)
            written.append(record)
            if not engine.alive():
                print(f"engine died during {p.point_id}; restarting it")
                engine.restart()
    print_summary(written)
    return written


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


def _run_point(sc: SweepConfig, run: RunDir, engine: EngineSession, adapter: EngineAdapter,
               p: PlannedPoint, settings: ClientSettings, seed: int, revision: str,
               job: str) -> dict[str, Any]:
    assert p.requests is not None
    started = now_iso()
    n = len(p.requests.warmup) + len(p.requests.measured)
    with tqdm(total=n, desc=f"conc {p.concurrency:>4}", unit="req") as bar:
        meas = measure_fixed(
            engine.base_url, settings, p.requests.warmup, p.requests.measured, p.concurrency,
            engine.scrape, on_done=lambda _r: bar.update(1),
        )
        bar.update(n - bar.n)
    run.write_requests(p.point_id, meas.records)
    run.write_json(f"server_metrics/{p.point_id}.json",
                   {"before": meas.server_before, "after": meas.server_after})
    gpus = GpuCount(gpus_of(sc))
    m = metrics_of(meas, gpus)
    health = meas.measured.health
    reasons = validity(m, health, sc.scenario.min_success)
    status = "ok"
    if not engine.alive():
        status = "failed"
        reasons.insert(0, engine.failure_reason())
    record: dict[str, Any] = {
        "point_id": p.point_id,
        "run_id": sc.run_id,
        "job": job,
        **p.identity,
        "engine_version": engine.version,
        **chip_fields(sc),
        "status": status,
        "valid": not reasons,
        "invalid_reasons": reasons,
        "seed": seed,
        "harness_revision": revision,
        "started_at": started,
        "finished_at": now_iso(),
        "measured_start_wall": meas.measured.start_wall,
        **m,
        **health_fields(health),
        **server_summary(meas.server_before, meas.server_after, adapter.spec_counters),
    }
    return record
