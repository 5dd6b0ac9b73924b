"""Checks of the open-loop, SLO, search and profiler settings (docs/slo.md), before anything
is built or launched. Each error names the key and the fix."""

from __future__ import annotations

import math
import re

from harness.config.errors import ConfigError, Where
from harness.config.schema import SweepConfig

# search.criteria keys: <stat>_<latency>_ms (at most), <stat>_intvty (at least), goodput_share
_LATENCY_KEY = re.compile(r"^(mean|median|p75|p90|p95|p99|p99\.9)_(ttft|tpot|itl|e2el)_ms$")
_INTVTY_KEY = re.compile(r"^(mean|median|p75|p90|p95|p99|p99\.9)_intvty$")
CRITERIA_HELP = ("p99_ttft_ms, p90_tpot_ms, median_e2el_ms (upper bounds), p50 as median, "
                 "median_intvty / p99_intvty (lower bounds, tok/s/user) or goodput_share")


def criterion_problem(key: str) -> str | None:
    k = key.replace("p50_", "median_")
    if _LATENCY_KEY.match(k) or _INTVTY_KEY.match(k) or k == "goodput_share":
        return None
    return f"{key!r} is not a statistic the search can judge"


def check_slo_settings(sc: SweepConfig, where: Where) -> None:
    scen = sc.scenario
    if scen.arrival != "closed":  # which kinds offer open loop: harness.workloads.registry
        rates = scen.request_rate
        # an SLO search picks its rates (search.lo..hi): a list is then optional
        needed = sc.search.mode != "slo"
        if (needed and not rates) or any(not (r > 0 and math.isfinite(r)) for r in rates):
            raise ConfigError.at(where, "scenario.request_rate",
                                 f"arrival {scen.arrival} needs a list of positive rates (req/s), "
                                 f"got {list(rates)}", "e.g. scenario.request_rate=[0.5,1,2], "
                                 "or search.mode=slo to search for the rate")
        if len(set(rates)) < len(rates):
            raise ConfigError.at(where, "scenario.request_rate",
                                 "a rate is listed more than once", "use repeats=N instead")
        if not scen.burstiness > 0 or not math.isfinite(scen.burstiness):
            raise ConfigError.at(where, "scenario.burstiness",
                                 f"must be positive, got {scen.burstiness}",
                                 "1 = Poisson; < 1 burstier; use arrival=constant for even gaps")
        if scen.max_inflight < 0 or scen.num_requests < 0:
            key = "scenario.max_inflight" if scen.max_inflight < 0 else "scenario.num_requests"
            raise ConfigError.at(where, key, "must not be negative", f"set {key}=0 (none)")
        if sc.client.workers > 1:
            raise ConfigError.at(where, "client.workers",
                                 "open-loop arrivals are sent from one client process",
                                 "set client.workers=1")
    for k in ("ttft_ms", "tpot_ms", "e2el_ms"):
        v = getattr(sc.slo, k)
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise ConfigError.at(where, f"slo.{k}", f"must be positive, got {v}",
                                 f"e.g. slo.{k}=500 (milliseconds), or null for no objective")
    check_search(sc, where)


def check_search(sc: SweepConfig, where: Where) -> None:
    s = sc.search
    if s.mode != "slo":  # which kinds a search runs: harness.workloads.registry
        return
    if not s.criteria:
        raise ConfigError.at(where, "search.criteria",
                             "search=slo needs at least one criterion",
                             "e.g. +search.criteria.p99_ttft_ms=500 (" + CRITERIA_HELP + ")")
    for key, bound in s.criteria.items():
        problem = criterion_problem(key)
        if problem:
            raise ConfigError(where("search.criteria"), f"search.criteria.{key}", problem,
                              "use " + CRITERIA_HELP)
        if not (bound > 0 and math.isfinite(bound)):
            raise ConfigError(where("search.criteria"), f"search.criteria.{key}",
                              f"bound must be positive, got {bound}", "e.g. 500")
        if key == "goodput_share" and not any(v is not None for v in
                                              (sc.slo.ttft_ms, sc.slo.tpot_ms, sc.slo.e2el_ms)):
            raise ConfigError(where("search.criteria"), "search.criteria.goodput_share",
                              "a goodput share needs a per-request SLO",
                              "set slo.ttft_ms / slo.tpot_ms / slo.e2el_ms")
    if not (0 < s.lo < s.hi) or not s.resolution > 0 or s.confirm < 0:
        raise ConfigError.at(where, "search.lo",
                             f"need 0 < lo < hi and resolution > 0, confirm >= 0 (got lo={s.lo} "
                             f"hi={s.hi} resolution={s.resolution} confirm={s.confirm})",
                             "e.g. search.lo=1 search.hi=64 search.resolution=1")
    if sc.scenario.arrival == "closed" and (s.lo != int(s.lo) or s.hi != int(s.hi)):
        raise ConfigError.at(where, "search.lo",
                             "concurrency bounds must be integers", "e.g. search.lo=1 search.hi=64")
