"""Whether a point can be trusted: one verdict made of named rules, like MLPerf LoadGen's
performance summary. Each rule records what was observed, the bound, its verdict and what to do
when it fails; every rule is recorded on the point, passed or not (docs/methodology.md §3, §6).

Pure functions of a point's metrics and the facts around it; the thresholds live in one
`ValiditySettings`, built from the config in one place (`settings_for`). A rule marked `fatal`
makes the point's status `failed` (the engine died or hung, or nothing succeeded): resume
measures such points again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from harness.config.schema import ScenarioConfig, SweepConfig
from harness.config.schema_bench import ClientConfig, ValidityConfig
from harness.config.schema_speculator import AcceptanceConfig
from harness.record.workload_traits import built_in_traits


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    ok: bool
    observed: Any
    bound: str
    message: str  # what was found, in one line
    remedy: str = ""  # what to do when it failed
    fatal: bool = False  # failed: the point's status is `failed`, not just invalid

    @property
    def reason(self) -> str:
        return f"{self.message} - {self.remedy}" if self.remedy else self.message


@dataclass(frozen=True, slots=True)
class Validity:
    rules: tuple[Rule, ...] = ()

    @property
    def valid(self) -> bool:
        return all(r.ok for r in self.rules)

    @property
    def failed(self) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if not r.ok)

    @property
    def fatal(self) -> bool:
        return any(r.fatal for r in self.failed)

    @property
    def reasons(self) -> list[str]:
        """Failed rules, fatal ones first (the first reason is the one a summary shows)."""
        return [r.reason for r in sorted(self.failed, key=lambda r: not r.fatal)]

    def to_json(self) -> list[dict[str, Any]]:
        return [{k: _jsonable(v) for k, v in asdict(r).items()} for r in self.rules]

    @classmethod
    def from_json(cls, rows: Iterable[Mapping[str, Any]]) -> Validity:
        fields = Rule.__slots__
        return cls(tuple(Rule(**{k: r.get(k) for k in fields if k in r}) for r in rows))

    @classmethod
    def legacy(cls, valid: bool, reasons: Iterable[str]) -> Validity:
        """A verdict from a results line written before rules were recorded."""
        rules = tuple(Rule("legacy", False, None, "", str(x)) for x in reasons)
        if not valid and not rules:
            rules = (Rule("legacy", False, None, "", "marked invalid"),)
        return cls(rules)


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


@dataclass(frozen=True, slots=True)
class ValiditySettings:
    """Every threshold a verdict uses."""

    max_failed_share: float = 0.05  # fixed 5% (InferenceX), agentic 10% (AgentX)
    # The defaults are the schema's (harness/config/schema*.py declares each setting once).
    max_stamp_err_ms: float = ClientConfig.max_stamp_err_ms  # estimated p99 stamp error
    max_cpu_share: float = ClientConfig.max_cpu_share  # of one core, by the client
    max_queue_delay_ms: float = ClientConfig.max_queue_delay_ms  # issue -> socket, p99
    max_stall_share: float = ClientConfig.max_stall_share  # worst stall's move of p99 E2EL
    min_measured_s: float = 0.0  # agentic: 900 (AgentX)
    max_overflow_share: float = ScenarioConfig.max_overflow_share  # agentic: overflows allowed
    # injected acceptance: two-sided confidence of the interval, and the fewest independent
    # draws that can judge it
    al_confidence: float = AcceptanceConfig.confidence
    al_min_drafts: float = AcceptanceConfig.min_drafts
    # The host (harness.telemetry.host): "invalid" (a disturbed point is invalid), "warn" (kept,
    # marked `host_warning`), "off" (not judged). Bounds: CPU of processes outside the harness's
    # and the engine's trees, in cores averaged over the window (`host`, which also judges the
    # GPUs' clocks), and the hypervisor's steal as a share of CPU time (`steal`, its own mode).
    # Why these values: docs/host.md, "Foreign CPU and steal".
    host: str = ValidityConfig.host
    host_foreign_cpu_max: float = ValidityConfig.host_foreign_cpu_max
    steal: str = ValidityConfig.steal
    host_steal_max: float = ValidityConfig.host_steal_max
    # The fewest completed requests a point of each kind needs for the percentiles it reports
    # (harness.record.metrics.needed_for): fixed-sequence p90 (10), agentic p95 (AgentX's
    # aggregates, 20). "invalid" | "warn" (kept, marked `sample_warning`) | "off".
    sample: str = ValidityConfig.sample
    min_sample_fixed: int = ValidityConfig.min_sample_fixed
    min_sample_agentic: int = ValidityConfig.min_sample_agentic
    # The engine's steadiness (harness.record.steadiness): the slowest tenth of a fixed point's
    # requests must decode at >= this share of the median rate. "invalid" | "warn" (kept,
    # marked `steady_warning`) | "off". Why 0.5: docs/host.md, "The engine's steadiness".
    steady: str = ValidityConfig.steady
    steady_decile_min: float = ValidityConfig.steady_decile_min


def settings_for(sc: SweepConfig) -> ValiditySettings:
    """The one place config keys become thresholds (each key keeps its documented home)."""
    scen = sc.scenario
    # session trees replayed for a duration have their own failure and time bounds; this layer
    # sits below workloads/, so the built-in kind's traits answer (harness.record.workload_traits)
    agentic = built_in_traits(scen.kind).has_sessions
    return ValiditySettings(
        max_failed_share=scen.max_failed_share if agentic else 1.0 - scen.min_success,
        max_stamp_err_ms=sc.client.max_stamp_err_ms,
        max_cpu_share=sc.client.max_cpu_share,
        max_queue_delay_ms=sc.client.max_queue_delay_ms,
        max_stall_share=sc.client.max_stall_share,
        min_measured_s=scen.min_measured_s if agentic else 0.0,
        max_overflow_share=scen.max_overflow_share,
        al_confidence=sc.speculator.acceptance.confidence,
        al_min_drafts=sc.speculator.acceptance.min_drafts,
        **host_settings(sc),
    )


HOST_MODES = ("invalid", "warn", "off")


def host_settings(sc: SweepConfig) -> dict[str, Any]:
    """The `validity.*` host keys where the config has them (ConfigError on a bad one)."""
    v = getattr(sc, "validity", None)
    if v is None:
        return {}
    from harness.config.errors import ConfigError

    if v.host not in HOST_MODES:
        raise ConfigError("the config", "validity.host", f"unknown mode {v.host!r}",
                          f"set validity.host to one of {', '.join(HOST_MODES)}")
    for key in ("host_foreign_cpu_max", "host_steal_max"):
        if not getattr(v, key) >= 0:
            raise ConfigError("the config", f"validity.{key}",
                              f"must be >= 0, got {getattr(v, key)}",
                              f"set validity.{key}={getattr(ValiditySettings, key)}")
    steal = getattr(v, "steal", ValiditySettings().steal)
    if steal not in HOST_MODES:
        raise ConfigError("the config", "validity.steal", f"unknown mode {steal!r}",
                          f"set validity.steal to one of {', '.join(HOST_MODES)}")
    out: dict[str, Any] = {"host": v.host, "host_foreign_cpu_max": float(v.host_foreign_cpu_max),
                           "steal": steal, "host_steal_max": float(v.host_steal_max)}
    if v.sample not in HOST_MODES:
        raise ConfigError("the config", "validity.sample", f"unknown mode {v.sample!r}",
                          f"set validity.sample to one of {', '.join(HOST_MODES)}")
    out.update(sample=v.sample, min_sample_fixed=int(v.min_sample_fixed),
               min_sample_agentic=int(v.min_sample_agentic))
    steady = getattr(v, "steady", ValiditySettings().steady)
    if steady not in HOST_MODES:
        raise ConfigError("the config", "validity.steady", f"unknown mode {steady!r}",
                          f"set validity.steady to one of {', '.join(HOST_MODES)}")
    bound = getattr(v, "steady_decile_min", ValiditySettings().steady_decile_min)
    if not 0 <= bound <= 1:
        raise ConfigError("the config", "validity.steady_decile_min",
                          f"must be a share of the median rate in [0, 1], got {bound}",
                          f"set validity.steady_decile_min={ValiditySettings().steady_decile_min}")
    out.update(steady=steady, steady_decile_min=float(bound))
    return out


# ---- rules on any point ---------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:g}%"


def request_rules(m: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
    """Rules on the measured requests themselves."""
    n, failed = int(m.get("num_requests") or 0), int(m.get("num_failed") or 0)
    if n == 0:
        return [Rule("measured_requests", False, 0, ">= 1", "no measured requests",
                     "check the scenario's request counts and the server log", fatal=True)]
    out = [
        Rule("any_request_succeeded", failed < n, n - failed, ">= 1",
             f"all {n} measured requests failed",
             "see the error column of the point's requests Parquet", fatal=True),
        Rule("failed_share", failed <= s.max_failed_share * n, failed / n,
             f"<= {_pct(s.max_failed_share)}",
             f"{failed} of {n} requests failed (more than {_pct(s.max_failed_share)})",
             "see the error column of the point's requests Parquet"),
    ]
    counts = (
        ("prompt_lengths", "num_prompt_mismatch",
         "requests: the server counted a different prompt length than was built",
         "the tokenizer or chat template differs from the server's"),
        ("usage_reported", "num_usage_missing",
         "requests without usage in the stream: output tokens were counted from chunks",
         "the server lacks stream_options.include_usage"),
        ("full_outputs", "num_short_output",
         "requests stopped before max_tokens although ignore_eos was set",
         "the context is full, or the server ignores ignore_eos"),
        ("bounded_outputs", "num_long_output",
         "requests returned more tokens than max_tokens (throughput would be inflated)",
         "the server ignores max_tokens; fix its request handling"),
    )
    for name, key, what, remedy in counts:
        k = int(m.get(key) or 0)
        out.append(Rule(name, k == 0, k, "0", f"{k} {what}", remedy))
    return out


def client_rules(health: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
    """The client must not have been the bottleneck (its own measurements, our thresholds)."""
    err = _num(health.get("client_stamp_err_p99_ms"))
    cpu = _num(health.get("client_cpu_share"))
    queue = _num(health.get("client_queue_delay_p99_ms"))
    lag, share = _num(health.get("client_lag_max_ms")), _num(health.get("client_stall_share"))
    fix = "lower concurrency or run the client on a separate, idle core"
    return [
        Rule("client_stamp_error", not err > s.max_stamp_err_ms, err,
             f"<= {s.max_stamp_err_ms:g} ms",
             f"client timestamp error p99 ~{err:.1f} ms > {s.max_stamp_err_ms:g} ms "
             "(event loop busy or descheduled)", fix),
        Rule("client_cpu_share", not cpu > s.max_cpu_share, cpu, f"<= {s.max_cpu_share:g}",
             f"client CPU share {cpu:.2f} > {s.max_cpu_share:g}", fix),
        Rule("client_queue_delay", not queue > s.max_queue_delay_ms, _finite(queue),
             f"<= {s.max_queue_delay_ms:g} ms",
             f"client queue delay p99 {queue:.1f} ms > {s.max_queue_delay_ms:g} ms (requests "
             "waited in the client before reaching the socket: less load than asked)",
             fix + ", or set client.workers"),
        # A stall within the stamp-error bound is judged by that rule; beyond it, it must not
        # be able to move p99 E2EL/TPOT by more than the share (harness.client.health.stalled)
        Rule("client_stall", not (lag > s.max_stamp_err_ms and share > s.max_stall_share),
             _finite(share), f"<= {_pct(s.max_stall_share)} of p99 E2EL",
             f"a client stall of {lag:.1f} ms could move p99 E2EL/TPOT by {100 * share:.1f}% "
             f"(> {_pct(s.max_stall_share)})", fix),
    ]


def engine_rules(alive: bool, hung: bool, failure: str) -> list[Rule]:
    """The engine stayed up and answered (`failure`: its reason, with the log's tail)."""
    return [
        Rule("engine_alive", alive, alive, "alive", failure if not alive else "engine alive",
             "see the engine log in servers/", fatal=True),
        Rule("engine_responsive", not (alive and hung), not hung, "answering",
             failure if hung else "engine answering", "see the engine log in servers/",
             fatal=True),
    ]


def acceptance_rule(mode: str, requested: float | None, realised: float | None,
                    draws: float | None, k: int, s: ValiditySettings,
                    note: str | None = None, expected: float | None = None) -> list[Rule]:
    """An injected point must realise the requested AL, judged statistically: the realised AL
    of `draws` independent draws must fall inside the interval the injected distribution
    allows at `s.al_confidence`, and there must be at least `s.al_min_drafts` of them
    (harness.speculation.verify). A fixed percentage would fail short points at random and pass long
    ones that are plainly off. `expected`: what the engine's metric reads when it applied
    the injection, where that is less than the requested AL (a metric that cuts each
    request's last step: harness.speculation.truncation)."""
    from harness.speculation.verify import verify

    if mode != "injected" or requested is None:
        return []
    v = verify(requested, realised, draws, k=k, confidence=s.al_confidence,
               min_drafts=s.al_min_drafts, expected=expected)
    lo, hi = v.interval
    reads = "" if expected is None else f" (reads {expected:.3f})"
    bound = f"{requested:g}{reads} in [{lo:.3f}, {hi:.3f}], >= {s.al_min_drafts:g} draws"
    if v.ok:
        return [Rule("acceptance_realised", True, realised, bound,
                     f"realised AL {realised:.3f} over {v.n:.0f} draws")]
    why = v.reason + (f" ({note})" if note and realised is None else "")
    return [Rule("acceptance_realised", False, realised, bound, why,
                 "check the engine's acceptance knob and metrics, or run longer")]


def speculation_rule(method: str, mode: str, k: int, realised: float | None,
                     note: str | None, waived: bool) -> list[Rule]:
    """A speculative label needs evidence: the engine's metrics must show it drafting (a
    realised AL). Injected points are judged by acceptance_realised; this is every other
    speculative point. `waived`: speculator.unverified_ok, recorded on the rule and point."""
    if method == "none" or mode == "injected":
        return []
    bound = "a realised AL from the engine's metrics"
    if realised is not None:
        return [Rule("speculation_observed", True, realised, bound,
                     f"{method} k={k}: realised AL {realised:.3f}")]
    why = f"{method} k={k} was never observed: no realised AL" + (f" ({note})" if note else "")
    if waived:
        return [Rule("speculation_observed", True, None, bound,
                     f"{why}; waived by speculator.unverified_ok=true: the label is unverified")]
    return [Rule("speculation_observed", False, None, bound, why,
                 "attach with engine.family set to the engine behind the URL (its metrics "
                 "verify the speculation), or set speculator.unverified_ok=true to keep the "
                 "point with its label marked unverified")]


# A send later than this after its scheduled time means the client fell behind its schedule
# (timestamped replay and open-loop arrivals).
MAX_SEND_LAG_P99_S = 0.005


def schedule_rule(lag_p99_ms: float | None) -> list[Rule]:
    """An open-loop point is invalid when the client sent late (p99 of send lag)."""
    bound = MAX_SEND_LAG_P99_S * 1e3
    ok = lag_p99_ms is None or lag_p99_ms <= bound
    return [Rule("schedule_kept", ok, lag_p99_ms, f"p99 <= {bound:g} ms",
                 f"requests were sent {lag_p99_ms or 0:.1f} ms late at p99 (the client fell "
                 "behind its schedule)", "lower the rate or speed-up, or give the client an "
                 "idle core")]


def judge(*groups: Iterable[Rule]) -> Validity:
    return Validity(tuple(r for g in groups for r in g))


def _finite(v: float) -> float | None:
    """An observation as it survives the point's JSON (NaN is written as null)."""
    return v if math.isfinite(v) else None


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan
