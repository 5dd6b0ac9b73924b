"""Agentic lanes (AgentX): traces loaded, fitted and checked before the engine starts; N live
session trees replayed on it (harness.workloads.replay); measured like a fixed-sequence point
plus AgentX's facts (QPS, theoretical and server-reported prefix-cache hit rates) and rules
(minimum measured time, context overflows), docs/methodology.md §6."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.client.health import ClientHealth
from harness.client.pool import open_client
from harness.client.streaming import PhaseResult, run_async
from harness.config.errors import ConfigError
from harness.config.locations import CONTEXT_MARGIN
from harness.config.schema import ScenarioConfig, SweepConfig
from harness.engines import prometheus
from harness.engines.hints import EngineHints
from harness.engines.sampler import Sampled
from harness.record.validity import Rule, ValiditySettings
from harness.records import PHASE_MEASURED
from harness.workloads.agentic_bodies import CACHE_BUST_MODES, AgenticBodies, replayed_hit_rates
from harness.workloads.agentx_facts import agentx_facts
from harness.workloads.base import LoadLevel, Measurement, OnDone, Target, Workload
from harness.workloads.fixed_seq import PromptBuilder
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay import Replayer
from harness.workloads.replay_result import ReplayResult
from harness.workloads.replay_settings import ReplaySettings
from harness.workloads.replay_split import LanesJob, replay_over_lanes
from harness.workloads.traces import Trace, scenario_traces
from harness.workloads.traces.fit import Fit, fit_traces

_OVERFLOW = re.compile(r"context|exceed|too long|maximum.*length|n_ctx", re.I)


def scenario_file(sc: SweepConfig) -> str:
    return f"scenarios/{sc.scenario.name}.yaml"


def load_fitted(scen: ScenarioConfig, root: Path, where: str) -> tuple[list[Trace], Fit]:
    traces = scenario_traces(scen, root, where)  # trace_files or a dataset corpus
    fit = Fit(scen.fit_mode, scen.fit_factor, scen.fit_cap_tokens)
    if fit.mode not in ("none", "cap", "scale"):
        raise ConfigError(where, "scenario.fit_mode", f"unknown fit mode {fit.mode!r}",
                          "use none, cap or scale")
    return fit_traces(traces, fit), fit


def replay_settings(scen: ScenarioConfig, where: str) -> ReplaySettings:
    """The scheduler's settings (docs/replay.md), or a ConfigError naming the bad one."""
    if scen.cache_bust not in CACHE_BUST_MODES:  # the bodies' setting, refused as early
        raise ConfigError(where, "scenario.cache_bust", f"unknown cache bust {scen.cache_bust!r}",
                          f"use one of {', '.join(CACHE_BUST_MODES)} (docs/settings.md)")
    try:
        return ReplaySettings(
            duration_s=scen.duration_s, idle_cap_s=scen.idle_cap_s, tree_cap_s=scen.tree_cap_s,
            warmup_requests_per_lane=scen.warmup_requests_per_lane,
            start_min=scen.start_min_ratio, start_max=scen.start_max_ratio, api=scen.api,
            join_rule=scen.join_rule, pacing=scen.pacing, split_chains=scen.split_chains,
            primer_start=scen.primer_start, window=scen.measured_window,
            start_seed=scen.start_seed, recycle=scen.recycle,
            subagent_start=scen.subagent_start, request_style=scen.request_style,
            session_affinity=scen.session_affinity,
            correlation_headers=tuple(scen.correlation_headers))
    except ValueError as e:
        name = str(e).split("=", 1)[0].removeprefix("replay ")
        key = {"window": "measured_window"}.get(name, name)
        raise ConfigError(where, f"scenario.{key}", str(e), "see docs/replay.md") from None


class AgenticLaneWorkload(Workload):
    """Concurrency N = N lanes, each a live session tree replayed closed-loop."""

    kind = "agentic"
    reads_traces = sends_correlation_ids = synthetic_text = drops_zero_tpot = True
    merges_speculative_curve = has_sessions = True
    load_means = "session trees"
    describes = "agentic replays"

    def __init__(self, sc: SweepConfig, tokenizer: Any, root: Path) -> None:
        where = scenario_file(sc)
        self.sc = sc
        self.traces, self.fit = load_fitted(sc.scenario, root, where)
        if not self.traces:
            raise ConfigError(where, "scenario.fit_cap_tokens", "the cap dropped every request",
                              "raise fit_cap_tokens or use fit_mode=scale")
        self.longest = max(r.in_tokens + r.out_tokens for t in self.traces
                           for r in t.requests())
        if self.longest + CONTEXT_MARGIN > sc.model.context_length:
            raise ConfigError(
                where, "scenario.fit_factor",
                f"the longest request needs {self.longest} tokens; {sc.model.name} has "
                f"{sc.model.context_length}",
                "scale the traces down (fit_mode=scale, a larger fit_factor) or cap them "
                "(fit_mode=cap fit_cap_tokens=...)",
            )
        self.replay = replay_settings(sc.scenario, where)  # bad settings fail here
        if self.replay.start_min > self.replay.start_max:
            raise ConfigError(where, "scenario.start_min_ratio",
                              f"{self.replay.start_min} is above start_max_ratio "
                              f"{self.replay.start_max}", "give start_min_ratio <= start_max_ratio")
        self.tokenizer = tokenizer
        self.prompts: BlockPrompts | None = None
        self.body: dict[str, Any] = {}
        self.overhead = 0

    def hints(self) -> EngineHints:
        # Lanes share system and tool prefixes: the prefix cache is what AgentX measures.
        # Twice the lanes as running requests: sub-agents fan out beyond one request per lane
        # (InferenceX launches its agentic engines so; docs/upstream/inferencex.md).
        return EngineHints(prefix_caching=True, longest_request_tokens=self.longest,
                           running_per_concurrency=2)

    def prepare(self, levels: list[LoadLevel], body: Mapping[str, Any]) -> None:
        seed = levels[0].seed if levels else 0
        self.prompts = BlockPrompts(self.tokenizer, seed)
        self.prompts.check_stability()
        self.overhead = PromptBuilder.for_tokenizer(self.tokenizer, self.sc.scenario.api,
                                                    False).count("")
        self.body = dict(body)
        if self.sc.scenario.request_style == "aiperf" and "temperature" not in (
                self.sc.scenario.sampling or {}):
            # AIPerf's agentic requests carry no temperature (aiperf 0.13.0
            # endpoints/openai_chat.py: only what the dataset or --extra-inputs set); ours
            # came from the fixed-sequence client's default (request_style=harness keeps it)
            self.body.pop("temperature", None)

    def run(self, target: Target, level: LoadLevel, on_done: OnDone = None) -> Measurement:
        assert self.prompts is not None, "prepare() first"
        return replay_point(self, target, level, on_done)

    def measured_facts(self, meas: Measurement, metrics: Mapping[str, Any],
                       samples: Sampled = ()) -> dict[str, Any]:
        measured = meas.measured.records
        return {
            **meas.extra,
            **replayed_hit_rates(meas.records),
            "num_context_overflow": sum(1 for r in measured
                                        if r.error and _OVERFLOW.search(r.error)),
            "fit": self.fit.describe(),
            "qps": metrics.get("request_tput"),
            **agentx_facts(meas, metrics, samples),
        }

    def rules(self, metrics: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
        return agentic_rules(metrics, s)


def replay_point(w: AgenticLaneWorkload, target: Target, level: LoadLevel,
                 on_done: OnDone) -> Measurement:
    scen = w.sc.scenario
    rs = replay_settings(scen, scenario_file(w.sc))
    settings = replace(target.settings, base_url=target.base_url)
    box: dict[str, prometheus.Sample] = {}
    cap = "max_completion_tokens" if rs.request_style == "aiperf" else "max_tokens"
    if settings.workers > 1 and w.sc.client.agentic_workers == "lanes":
        # the lanes over the processes, each its own scheduler (harness.workloads.replay_split)
        assert w.prompts is not None
        job = LanesJob(settings, w.traces, level.concurrency, [], rs, w.prompts, w.body,
                       w.overhead, scen.cache_bust, cap, level.seed + level.repeat,
                       level.point_id)
        result, health = replay_over_lanes(
            job, settings.workers, lambda: box.setdefault("before", target.scrape()), on_done)
        return _measurement(result, health, box, target.scrape())

    async def go() -> tuple[Any, Any]:
        # client.workers > 1: the scheduler stays here, the HTTP work goes to worker
        # processes (harness.client.pool); 1: the in-process client, as ever.
        async with open_client(settings) as client:
            bodies = AgenticBodies(w.prompts, w.body, w.overhead, rs.api,
                                   cache_bust=scen.cache_bust, max_tokens_field=cap)
            replayer = Replayer(client, w.traces, level.concurrency, rs, bodies,
                                level.seed + level.repeat, on_done, salt_prefix=level.point_id)
            probe = client.health_probe()
            replayer.on_measured_start = lambda: (box.setdefault("before", target.scrape()),
                                                  probe.start())
            result = await replayer.run()
            return result, await probe.stop()

    result, health = run_async(go())
    return _measurement(result, health, box, target.scrape())


def _measurement(result: ReplayResult, health: ClientHealth, box: dict[str, prometheus.Sample],
                 after: prometheus.Sample) -> Measurement:
    measured = [r for r in result.records if r.phase == PHASE_MEASURED]
    warm = [r for r in result.records if r.phase != PHASE_MEASURED]
    warm_phase = PhaseResult(warm, result.start_ts, result.start_ts, result.start_wall, health)
    meas_phase = PhaseResult(measured, result.start_ts, result.end_ts, result.start_wall, health)
    m = Measurement(warm_phase, meas_phase, box.get("before", {}), after)
    m.extra = {"sessions_started": result.sessions_started,
               "sessions_finished": result.sessions_finished}
    return m


def agentic_rules(m: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
    """AgentX's rules: a long enough measured window, few context overflows."""
    n = int(m.get("num_requests") or 0)
    overflow = int(m.get("num_context_overflow") or 0)
    dur = float(m.get("duration_s") or 0.0)
    return [
        Rule("measured_duration", dur >= s.min_measured_s, dur, f">= {s.min_measured_s:g} s",
             f"measured {dur:.0f} s < {s.min_measured_s:.0f} s (scenario.min_measured_s)",
             "raise scenario.duration_s"),
        Rule("context_overflow", overflow <= s.max_overflow_share * n, overflow,
             f"<= {100 * s.max_overflow_share:g}% of {n}",
             f"{overflow} of {n} requests overflowed the context "
             f"(> {100 * s.max_overflow_share:g}%)", "scale or cap the traces"),
    ]
