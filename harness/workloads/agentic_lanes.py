"""An agentic point: traces loaded, fitted and checked before the engine starts; replayed on
it; measured like a fixed-sequence point plus AgentX's extras (QPS, E2E-normalized
interactivity, theoretical and server-side prefix-cache hit rates, validity rules)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.client import ClientSettings, PhaseResult, StreamingClient, run_async
from harness.client_health import HealthProbe
from harness.config.errors import ConfigError
from harness.config.schema import ScenarioConfig, SweepConfig
from harness.config.validate import CONTEXT_MARGIN
from harness.engines import prometheus
from harness.point import Measurement
from harness.records import PHASE_MEASURED, RequestRecord
from harness.workloads.fixed_seq import PromptBuilder
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay import Replayer, ReplaySettings
from harness.workloads.traces import Trace, load_traces
from harness.workloads.traces.fit import Fit, fit_traces
from harness.workloads.traces.stats import PrefixTrie, hit_tokens

_OVERFLOW = re.compile(r"context|exceed|too long|maximum.*length|n_ctx", re.I)


@dataclass
class AgenticPlan:
    traces: list[Trace]
    fit: Fit
    prompts: BlockPrompts
    overhead: int  # prompt tokens the request format adds around the content
    max_request_tokens: int


def scenario_file(sc: SweepConfig) -> str:
    return f"scenarios/{sc.scenario.name}.yaml"


def load_fitted(scen: ScenarioConfig, root: Path, where: str) -> tuple[list[Trace], Fit]:
    if not scen.trace_files:
        raise ConfigError(where, "scenario.trace_files", "an agentic scenario needs traces",
                          "list trace files (relative to the repository) in trace_files")
    traces: list[Trace] = []
    for f in scen.trace_files:
        p = Path(f) if Path(f).is_absolute() else root / f
        traces.extend(load_traces(p, scen.trace_format))
    fit = Fit(scen.fit_mode, scen.fit_factor, scen.fit_cap_tokens)
    if fit.mode not in ("none", "cap", "scale"):
        raise ConfigError(where, "scenario.fit_mode", f"unknown fit mode {fit.mode!r}",
                          "use none, cap or scale")
    return fit_traces(traces, fit), fit


def prepare(sc: SweepConfig, tokenizer: Any, root: Path, seed: int) -> AgenticPlan:
    """Everything that can fail on bad input, before any server starts."""
    where = scenario_file(sc)
    traces, fit = load_fitted(sc.scenario, root, where)
    if not traces:
        raise ConfigError(where, "scenario.fit_cap_tokens", "the cap dropped every request",
                          "raise fit_cap_tokens or use fit_mode=scale")
    longest = max(r.in_tokens + r.out_tokens for t in traces for r in t.requests())
    if longest + CONTEXT_MARGIN > sc.model.context_length:
        raise ConfigError(
            where, "scenario.fit_factor",
            f"the longest request needs {longest} tokens; {sc.model.name} has "
            f"{sc.model.context_length}",
            "scale the traces down (fit_mode=scale, a larger fit_factor) or cap them "
            "(fit_mode=cap fit_cap_tokens=...)",
        )
    prompts = BlockPrompts(tokenizer, seed)
    prompts.check_stability()
    overhead = PromptBuilder.for_tokenizer(tokenizer, sc.scenario.api, False).count("")
    return AgenticPlan(traces, fit, prompts, overhead, longest)


def measure_agentic(plan: AgenticPlan, sc: SweepConfig, base_url: str, settings: ClientSettings,
                    lanes: int, body_base: dict[str, Any], seed: int, point_id: str,
                    scrape: Callable[[], prometheus.Sample],
                    on_done: Callable[[RequestRecord], None] | None = None) -> Measurement:
    scen = sc.scenario
    rs = ReplaySettings(duration_s=scen.duration_s, idle_cap_s=scen.idle_cap_s,
                        tree_cap_s=scen.tree_cap_s, warmup_probes=scen.warmup_probes,
                        api=scen.api)
    settings = ClientSettings(**{**asdict(settings), "base_url": base_url})
    box: dict[str, prometheus.Sample] = {}

    async def go() -> tuple[Any, Any]:
        async with StreamingClient(settings) as client:
            replayer = Replayer(client, plan.traces, lanes, rs, plan.prompts, body_base,
                                plan.overhead, seed, on_done, salt_prefix=point_id)
            probe = HealthProbe(client)
            replayer.on_measured_start = lambda: (box.setdefault("before", scrape()),
                                                  probe.start())
            result = await replayer.run()
            return result, await probe.stop()

    result, health = run_async(go())
    after = scrape()
    measured = [r for r in result.records if r.phase == PHASE_MEASURED]
    warm = [r for r in result.records if r.phase != PHASE_MEASURED]
    warm_phase = PhaseResult(warm, result.start_ts, result.start_ts, result.start_wall, health)
    meas_phase = PhaseResult(measured, result.start_ts, result.end_ts, result.start_wall, health)
    m = Measurement(warm_phase, meas_phase, box.get("before", {}), after)
    m.extra = {"sessions_started": result.sessions_started,
               "sessions_finished": result.sessions_finished}
    return m


def replayed_hit_rates(records: list[RequestRecord]) -> dict[str, float]:
    """Theoretical prefix-hit rate of what was replayed (an infinite cache over the blocks
    sent, in send order, warmup included), and what the server reported in usage."""
    trie = PrefixTrie()
    hit = total = 0
    cached = prompt = 0
    for r in sorted(records, key=lambda r: r.send_ts):
        t = r.tags
        if "hash_ids" not in t:
            continue
        matched = trie.match_and_insert([(t["salt"], h) for h in t["hash_ids"]])
        if r.phase != PHASE_MEASURED or not r.ok:
            continue
        hit += hit_tokens(matched, int(t["block_size"]), int(t["in"]))
        total += int(t["in"])
        if r.cached_tokens >= 0 and r.prompt_tokens > 0:
            cached += r.cached_tokens
            prompt += r.prompt_tokens
    return {
        "theoretical_hit_rate": hit / total if total else math.nan,
        "server_hit_rate": cached / prompt if prompt else math.nan,
    }


def server_metrics_hit_rate(before: prometheus.Sample, after: prometheus.Sample) -> float:
    """Prefix-cache hits from /metrics deltas (llama.cpp and vLLM names), tokens."""
    d = prometheus.delta(before, after)
    for hits, queries in (("llamacpp:prompt_tokens_cached_total", "llamacpp:prompt_tokens_total"),
                          ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total")):
        h, q = prometheus.total(d, hits), prometheus.total(d, queries)
        if not math.isnan(h) and q and q > 0:
            # llama.cpp counts only tokens it evaluated in prompt_tokens_total
            return h / (q + h) if hits.startswith("llamacpp") else h / q
    return math.nan


def agentic_validity(m: dict[str, Any], records: list[RequestRecord],
                     scen: ScenarioConfig) -> list[str]:
    reasons = []
    measured = [r for r in records if r.phase == PHASE_MEASURED]
    n = len(measured)
    if m["duration_s"] < scen.min_measured_s:
        reasons.append(f"measured {m['duration_s']:.0f} s < {scen.min_measured_s:.0f} s "
                       "(scenario.min_measured_s); raise scenario.duration_s")
    overflow = sum(1 for r in measured if r.error and _OVERFLOW.search(r.error))
    m["num_context_overflow"] = overflow
    if n and overflow > scen.max_overflow_share * n:
        reasons.append(f"{overflow} of {n} requests overflowed the context "
                       f"(> {100 * scen.max_overflow_share:g}%); scale or cap the traces")
    return reasons
