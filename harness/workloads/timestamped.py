"""Timestamped (open-loop) replay: every request sent at its recorded arrival time, divided by a
speed-up factor, whatever the server is doing (AIPerf's fixed schedule; docs/methodology.md §6
for the traces that carry arrival times: Mooncake, Azure).

The load level of a point is the speed-up multiplier: at `concurrency=[1,2,4]` the schedule
runs at `scenario.speedup` x 1, 2 and 4. Sends never wait for replies, so a slow server shows
as requests piling up in flight, never as a delayed schedule; each request records how late the
client sent it, and a point where the client could not keep the schedule is invalid.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from harness.client.streaming import PhaseResult, StreamingClient, run_async
from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.engines.hints import EngineHints
from harness.engines.sampler import Sampled
from harness.record.validity import Rule, ValiditySettings, schedule_rule
from harness.records import RequestSpec
from harness.workloads.agentic_lanes import load_fitted, replayed_hit_rates, scenario_file
from harness.workloads.base import LoadLevel, Measurement, OnDone, Target, Workload
from harness.workloads.fixed_seq import PromptBuilder
from harness.workloads.prompts import BlockPrompts
from harness.workloads.traces import Trace


def arrivals(traces: list[Trace], where: str) -> list[tuple[float, Trace]]:
    """(arrival offset s, one-request trace), sorted; traces with sessions cannot be replayed
    open-loop (their turns depend on each other's replies)."""
    out = []
    for t in traces:
        reqs = t.requests()
        if len(reqs) != 1:
            raise ConfigError(where, "scenario.kind",
                              f"trace {t.id} has {len(reqs)} requests in sessions; timestamped "
                              "replay sends independent requests at their arrival times",
                              "use kind: agentic for session traces (Weka/AgentX), timestamped "
                              "for Mooncake or Azure")
        out.append((reqs[0].t, t))
    out.sort(key=lambda x: x[0])
    t0 = out[0][0] if out else 0.0
    return [(t - t0, tr) for t, tr in out]


class TimestampedReplayWorkload(Workload):
    kind = "timestamped"
    reads_traces = True
    load_means = "speed-up multiplier"
    describes = "timestamped replays"

    def __init__(self, sc: SweepConfig, tokenizer: Any, root: Path) -> None:
        where = scenario_file(sc)
        self.sc, self.tokenizer = sc, tokenizer
        traces, self.fit = load_fitted(sc.scenario, root, where)
        self.schedule = arrivals(traces, where)
        if not self.schedule:
            raise ConfigError(where, "scenario.trace_files", "no requests to replay",
                              "list trace files with requests")
        self.longest = max(r.in_tokens + r.out_tokens for _, t in self.schedule
                           for r in t.requests())
        self.specs: dict[str, list[tuple[float, RequestSpec]]] = {}

    def hints(self) -> EngineHints:
        return EngineHints(prefix_caching=True, longest_request_tokens=self.longest)

    def speedup(self, level: LoadLevel) -> float:
        return self.sc.scenario.speedup * level.concurrency

    def prepare(self, levels: list[LoadLevel], body: Mapping[str, Any]) -> None:
        if not levels:
            return
        prompts = BlockPrompts(self.tokenizer, levels[0].seed)
        prompts.check_stability()
        api = self.sc.scenario.api
        overhead = PromptBuilder.for_tokenizer(self.tokenizer, api, False).count("")
        for lv in levels:
            self.specs[lv.point_id] = self._specs(lv, prompts, dict(body), overhead, api)

    def _specs(self, lv: LoadLevel, prompts: BlockPrompts, body: dict[str, Any],
               overhead: int, api: str) -> list[tuple[float, RequestSpec]]:
        out = []
        window = self.sc.scenario.duration_s
        for n, (offset, tr) in enumerate(self.schedule):
            at = offset / self.speedup(lv)
            if at > window:
                break
            r = tr.requests()[0]
            salt = (lv.point_id, "shared") if tr.shared_scope else (lv.point_id, tr.id)
            text = prompts.prompt(salt, r.hash_ids, tr.block_size, r.in_tokens, pad_key=tr.id)
            b = {**body, "max_tokens": r.out_tokens}
            if api == "chat":
                b["messages"] = [{"role": "user", "content": text}]
            else:
                b["prompt"] = text
            tags = {"trace": tr.id, "scheduled_s": at, "in": r.in_tokens,
                    "out": r.out_tokens, "block_size": tr.block_size, "salt": repr(salt),
                    "hash_ids": list(r.hash_ids[:-(-r.in_tokens // tr.block_size)])}
            out.append((at, RequestSpec(
                f"{lv.point_id}-{n}", "/v1/chat/completions" if api == "chat"
                else "/v1/completions", orjson.dumps(b), r.in_tokens + overhead,
                r.out_tokens, tags=tags)))
        return out

    def expected_requests(self, level: LoadLevel) -> int:
        return len(self.specs.get(level.point_id, ()))

    def run(self, target: Target, level: LoadLevel, on_done: OnDone = None) -> Measurement:
        return run_schedule(self.specs[level.point_id], target, on_done)

    def measured_facts(self, meas: Measurement, metrics: Mapping[str, Any],
                       samples: Sampled = ()) -> dict[str, Any]:
        lags = [r.tags["send_lag_s"] for r in meas.measured.records if "send_lag_s" in r.tags]
        arr = np.asarray(lags, dtype=float)
        return {**meas.extra, **replayed_hit_rates(meas.records), "fit": self.fit.describe(),
                "qps": metrics.get("request_tput"),
                "send_lag_p99_ms": float(np.percentile(arr, 99) * 1e3) if arr.size else None,
                "send_lag_max_ms": float(arr.max() * 1e3) if arr.size else None}

    def rules(self, metrics: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
        return schedule_rule(metrics.get("send_lag_p99_ms"))


def run_schedule(schedule: list[tuple[float, RequestSpec]], target: Target,
                 on_done: OnDone) -> Measurement:
    settings = replace(target.settings, base_url=target.base_url)
    before = target.scrape()
    if settings.workers > 1:  # the schedule dealt over client processes, one start instant
        from harness.client.workers import schedule_over_workers

        phase = schedule_over_workers(settings, schedule, settings.workers, schedule_phase,
                                      on_done)
    else:
        phase = run_async(schedule_phase(settings, schedule, None, on_done))
    after = target.scrape()
    empty = PhaseResult([], phase.start_ts, phase.start_ts, phase.start_wall, phase.health)
    return Measurement(empty, phase, before, after)


async def schedule_phase(settings: Any, schedule: list[tuple[float, RequestSpec]],
                         t0: float | None, on_done: OnDone) -> PhaseResult:
    """Send each request at t0 + its offset (t0: a perf_counter instant, or now)."""
    async with StreamingClient(settings) as client:
        probe = client.health_probe()
        probe.start()
        if t0 is None:
            t0 = time.perf_counter()
        start_wall = time.time() + (t0 - time.perf_counter())

        async def one(at: float, spec: RequestSpec):
            rec = await client.send(spec)
            rec.tags["send_lag_s"] = rec.issue_ts - (t0 + at)  # >= 0: it slept until then
            if on_done is not None:
                on_done(rec)
            return rec

        tasks = []
        for at, spec in schedule:  # sends never wait for replies
            # the loop's timers round to a millisecond and may wake a little early: sleep
            # again until the time has really come (a send is never early)
            while (delay := t0 + at - time.perf_counter()) > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(at, spec)))
        records = list(await asyncio.gather(*tasks))
        ends = [r.end_ts for r in records if r.end_ts == r.end_ts]  # NaN: never sent
        end = max(ends or [time.perf_counter()])
        return PhaseResult(records, t0, end, start_wall, await probe.stop())
