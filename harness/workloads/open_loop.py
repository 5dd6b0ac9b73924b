"""A fixed-sequence point under open-loop arrivals (docs/slo.md): warmup and measured phases
each sent on a seeded schedule drawn at the point's rate (harness.client.open_loop)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from harness.client.open_loop import arrival_offsets, run_open_loop
from harness.client.streaming import PhaseResult, StreamingClient, run_async
from harness.config.schema import ScenarioConfig
from harness.records import RequestSpec
from harness.workloads.base import LoadLevel, Measurement, OnDone, Target, measured_window

SCHEDULE_SEED_TAG = 0x0A11  # keeps the schedule's draws apart from the prompts'


def schedule(specs: list[RequestSpec], level: LoadLevel, scen: ScenarioConfig,
             phase_tag: int) -> list[tuple[float, RequestSpec]]:
    """(offset s, spec) for one phase: seeded by the point's seed, rate and repeat."""
    assert level.rate is not None
    rng = np.random.default_rng([level.seed, round(level.rate * 1000), level.repeat,
                                 SCHEDULE_SEED_TAG, phase_tag])
    at = arrival_offsets(scen.arrival, level.rate, len(specs), scen.burstiness, rng)
    return list(zip(at.tolist(), specs, strict=True))


def measure_open_loop(target: Target, warmup: list[RequestSpec], measured: list[RequestSpec],
                      level: LoadLevel, scen: ScenarioConfig,
                      on_done: OnDone = None) -> Measurement:
    """Warmup on its own schedule (excluded from every metric), a scrape, the measured
    schedule inside the window hooks, a scrape."""
    settings = dataclasses.replace(target.settings, base_url=target.base_url)

    def phase(plan: list[tuple[float, RequestSpec]]) -> PhaseResult:
        async def go() -> PhaseResult:
            async with StreamingClient(settings) as client:
                return await run_open_loop(client, plan, scen.max_inflight, on_done)
        return run_async(go())

    warm = phase(schedule(warmup, level, scen, 0)) if warmup else None
    before = target.scrape()
    with measured_window(target):
        meas = phase(schedule(measured, level, scen, 1))
    after = target.scrape()
    if warm is None:
        warm = PhaseResult([], meas.start_ts, meas.start_ts, meas.start_wall, meas.health)
    extra: dict[str, Any] = {"request_rate": level.rate, "arrival": scen.arrival,
                             "burstiness": scen.burstiness if scen.arrival == "gamma" else None,
                             "max_inflight": scen.max_inflight}
    return Measurement(warm, meas, before, after, extra)
