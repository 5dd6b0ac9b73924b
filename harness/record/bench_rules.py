"""The bench's rules on a point, beside the client's (harness.record.validity): the host
(foreign CPU, steal), the accelerator's clocks, the engine's steadiness through the window,
and whether the sample holds the percentiles the point reports (docs/host.md). Pure functions
of a point's figures, its request records and `ValiditySettings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.record.steadiness import slow_text, steadiness_figures
from harness.record.validity import Rule, ValiditySettings, _finite, _num, _pct
from harness.record.workload_traits import WorkloadTraits
from harness.records import RequestRecord

_HOST_REMEDY = ("measure on a quiet host: stop the processes named in host_foreign_top (or "
                "move them off this machine), then resume the run; validity.host=warn keeps "
                "such points with a mark")


def host_rules(f: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
    """The host must not have disturbed the point: CPU taken by processes outside ours
    (`validity.host`), and the hypervisor's steal (`validity.steal`), from
    harness.telemetry.host.HostFigures.fields. Nothing when the host was not sampled or the
    mode is `off`; with `warn` the rule passes and says what it saw (`host_warning` marks the
    point: `host_facts`)."""
    if not _num(f.get("host_covered_s")) > 0:
        return []
    out = []
    if s.host != "off":
        foreign = _num(f.get("host_foreign_cpu"))
        top = ", ".join(f.get("host_foreign_top") or []) or "no process named"
        ok = not foreign > s.host_foreign_cpu_max
        out.append(Rule(
            "host_foreign_cpu", ok or s.host == "warn", _finite(foreign),
            f"<= {s.host_foreign_cpu_max:g} cores",
            f"other processes used {foreign:.2f} cores through the window (busiest: {top})"
            + ("" if ok or s.host != "warn" else " (kept: validity.host=warn)"), _HOST_REMEDY))
    if s.steal != "off":
        steal = _num(f.get("host_steal_share"))
        ok = not steal > s.host_steal_max
        out.append(Rule(
            "host_steal", ok or s.steal == "warn", _finite(steal),
            f"<= {_pct(s.host_steal_max)} of CPU time",
            f"the hypervisor took {100 * steal:.1f}% of CPU time (steal)"
            + ("" if ok or s.steal != "warn" else " (kept: validity.steal=warn)"),
            "rerun the point when the hypervisor is not oversubscribed (steal comes in bursts), "
            "or measure on a dedicated or bare-metal instance; validity.steal=warn keeps such "
            "points with a mark"))
    return out


def gpu_clock_rules(f: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
    """The accelerator's clocks were not held down by heat or the board's protections during
    the window (harness.telemetry.clocks.clock_figures; the power cap is recorded, not judged).
    Judged as the host is (`validity.host`); nothing where the telemetry gives no reasons."""
    if s.host == "off" or not _num(f.get("gpu_clock_readings")) > 0:
        return []
    share = _num(f.get("gpu_throttled_share"))
    ok = not share > 0
    why = ", ".join(f.get("gpu_throttle_reasons") or [])
    where = ", ".join(f.get("gpu_throttled_devices") or [])
    kept = "" if ok or s.host != "warn" else " (kept: validity.host=warn)"
    return [Rule("gpu_clocks", ok or s.host == "warn", _finite(share), "0 readings throttled",
                 f"GPU {where} clocks held down ({why}) in {100 * share:.0f}% of the window's "
                 f"readings{kept}" if not ok else "no thermal or hardware slowdown",
                 "let the GPU cool or fix its cooling/power delivery, then resume the run; "
                 "validity.host=warn keeps such points with a mark")]


def steadiness_rules(f: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
    """The engine decoded steadily through the window: the slowest tenth of requests decoded at
    no less than `steady_decile_min` of the median rate (harness.record.steadiness). `f`: its
    figures, nothing where they are absent (too few requests, a shape that varies, a
    speculative point without per-request acceptance) or `validity.steady=off`; with `warn`
    the rule passes and says what it saw (`steady_facts`)."""
    ratio = _num(f.get("decode_slow_ratio"))
    if s.steady == "off" or not ratio >= 0:
        return []
    ok = not ratio < s.steady_decile_min
    slow = slow_text(f.get("decode_slowest") or [], s.steady_decile_min)
    kept = " (kept: validity.steady=warn)" if not ok and s.steady == "warn" else ""
    n = int(_num(f.get("decode_judged")) or 0)
    msg = (f"the engine was not steady: the slowest tenth of {n} requests decoded at "
           f"{ratio:.2f}x the median rate ({slow}){kept}" if not ok else
           f"the slowest tenth of {n} requests decoded at {ratio:.2f}x the median rate")
    return [Rule("engine_steady", ok or s.steady == "warn", ratio,
                 f">= {s.steady_decile_min:g}x the median decode rate", msg,
                 "something slowed the engine for these requests (a neighbour on the host, a "
                 "throttled clock, swapping): see the host rules and the time series where "
                 "they decoded, then resume the run; validity.steady=warn keeps such points "
                 "with a mark")]


def steady_facts(rules: Iterable[Rule]) -> dict[str, Any]:
    """`steady_warning` on a point `validity.steady=warn` kept although the engine was not
    steady."""
    seen = [r.message for r in rules
            if r.name == "engine_steady" and "(kept: validity.steady=warn)" in r.message]
    return {"steady_warning": seen[0]} if seen else {}


def sample_rules(m: Mapping[str, Any], traits: WorkloadTraits,
                 s: ValiditySettings) -> list[Rule]:
    """A point must hold the percentiles its kind reports: at least `min_sample_agentic`
    completed requests where the load is session trees, else `min_sample_fixed`. With
    `validity.sample=warn` (the default) it passes and says so (`sample_facts`); `invalid`
    fails the point."""
    if s.sample == "off":
        return []
    from harness.record.metrics import unheld_text

    need = s.min_sample_agentic if traits.has_sessions else s.min_sample_fixed
    n = int(m.get("num_completed") or 0)
    ok = n >= need
    unheld = unheld_text(m.get("stats_unheld") or {}, m.get("stats_sample") or {})
    msg = (f"{n} completed requests: the percentiles of a point of {traits.load_means} "
           f"need >= {need}"
           + (f" ({'; '.join(unheld[:3])})" if unheld else ""))
    if not ok and s.sample == "warn":
        msg += " (kept: validity.sample=warn)"
    return [Rule("sample_size", ok or s.sample == "warn", n, f">= {need} completed requests",
                 msg, "raise scenario.requests_per_conc (fixed) or measure longer "
                 "(agentic: scenario.min_measured_s)")]


def sample_facts(rules: Iterable[Rule]) -> dict[str, Any]:
    """`sample_warning` on a point kept with too few requests for its percentiles."""
    seen = [r.message for r in rules
            if r.name == "sample_size" and "(kept: validity.sample=warn)" in r.message]
    return {"sample_warning": seen[0]} if seen else {}


def host_facts(rules: Iterable[Rule], s: ValiditySettings) -> dict[str, Any]:
    """`host_warning` on a point `validity.host=warn` or `validity.steal=warn` kept although
    the host disturbed it."""
    seen = [r.message for r in rules if r.name.startswith(("host_", "gpu_"))
            and ("(kept: validity.host=warn)" in r.message
                 or "(kept: validity.steal=warn)" in r.message)]
    return {"host_warning": "; ".join(seen)} if seen else {}


def bench_rules(f: Mapping[str, Any], m: Mapping[str, Any], traits: WorkloadTraits,
                s: ValiditySettings, records: Sequence[RequestRecord] = (),
                speculative: bool = False,
                window_start: float | None = None) -> tuple[list[Rule], dict[str, Any]]:
    """The bench's rules on one point (host, GPU clocks, the engine's steadiness, sample size)
    and what the point carries from them (the steadiness figures, the marks a point kept under
    `warn` carries): `f` harness.telemetry.host.point_figures, `m` its metrics, `records` its
    measured requests, `traits` its workload's. Steadiness is judged where every request has
    the scenario's shape only: requests of different shapes decode at different rates by
    design."""
    steady = (steadiness_figures(records, speculative, window_start)
              if traits.fixed_shape and s.steady != "off" else {})
    rules = [*host_rules(f, s), *gpu_clock_rules(f, s), *steadiness_rules(steady, s),
             *sample_rules(m, traits, s)]
    return rules, {**steady, **host_facts(rules, s), **steady_facts(rules),
                   **sample_facts(rules)}
