"""Which draft length to ship, and what a better drafter would buy.

Pure functions over the series of harness.publish.speedup:

- best k: among the configurations of one method and acceptance mode that differ in k (a sweep
  `speculator.k=1,2,3,4,5` at real acceptance, or injected at each k's golden AL), plus plain
  decoding as "off", the best at each load (highest median interactivity; at one load a
  closed loop's throughput follows it) and at each interactivity target (highest throughput
  per GPU along the frontiers), with the margin over the next best - as vLLM's
  `bench sweep tune_speculative_k` picks k per batch size.
- speedup against AL: injected configurations of one method and k that differ only in the
  AL; the interactivity ratio to plain at each load per AL, and the break-even AL at each load
  (where the ratio crosses 1, linear in AL between the measured ALs).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from harness.publish.curves import interpolate_on_frontier
from harness.publish.speedup import (
    INTVTY,
    TPUT,
    Series,
    SpecConfig,
    base_label,
    overlap_targets,
    plain_at,
)


def k_families(series: dict[tuple, Series]) -> dict[tuple, list[Series]]:
    """(base, method, mode) -> its series over k (at least two k), plain first when present."""
    fams: dict[tuple, list[Series]] = defaultdict(list)
    for (base, cfg), s in series.items():
        if not cfg.plain:
            fams[(base, cfg.method, cfg.mode)].append(s)
    out = {}
    for (base, method, mode), ss in fams.items():
        if len({s.config.k for s in ss}) < 2:
            continue
        plain = series.get((base, SpecConfig()))
        out[(base, method, mode)] = ([plain] if plain else []) + sorted(
            ss, key=lambda s: (s.config.k, s.config.al or 0.0))
    return out


def _candidate(s: Series) -> str:
    c = s.config
    if c.plain:
        return "off"
    return f"k={c.k}" + (f" AL {c.al:g}" if c.al is not None else "")


def _pick(values: dict[str, float]) -> dict[str, Any]:
    ranked = sorted(((v, name) for name, v in values.items() if math.isfinite(v)),
                    reverse=True)
    if not ranked:
        return {"best": "", "best_value": math.nan, "runner_up": "", "margin": math.nan}
    best_v, best = ranked[0]
    if len(ranked) == 1:
        return {"best": best, "best_value": best_v, "runner_up": "", "margin": math.nan}
    second_v, second = ranked[1]
    return {"best": best, "best_value": best_v, "runner_up": second,
            "margin": best_v / second_v - 1.0 if second_v > 0 else math.nan}


def best_k_by_load(series: dict[tuple, Series]) -> list[dict[str, Any]]:
    """Per family and load: every candidate's median interactivity, the best and its margin
    over the next best (a relative difference: 0.05 = 5% more tok/s/user)."""
    rows = []
    for (base, method, mode), fam in sorted(k_families(series).items(), key=str):
        loads = sorted({c for s in fam if not s.config.plain for c in s.by_conc})
        for conc in loads:
            vals = {}
            for s in fam:
                st = s.stat(conc, INTVTY)
                vals[_candidate(s)] = st.mean if st else math.nan
            rows.append({"base": base_label(base), "method": method, "mode": mode,
                         "conc": conc, **_pick(vals), "values": vals})
    return rows


def best_k_by_target(series: dict[tuple, Series], targets: Sequence[float] = (),
                     n_auto: int = 4) -> list[dict[str, Any]]:
    """Per family and interactivity target: throughput per GPU along each candidate's
    frontier (never extrapolated), the best and its margin."""
    rows = []
    for (base, method, mode), fam in sorted(k_families(series).items(), key=str):
        spec = [p for s in fam if not s.config.plain for p in s.points]
        plain = next((s.points for s in fam if s.config.plain), spec)
        for t in targets or overlap_targets(spec, plain, n_auto):
            vals = {}
            for s in fam:
                r = interpolate_on_frontier(s.points, t, INTVTY, [TPUT], out_of_range="none")
                vals[_candidate(s)] = r[TPUT] if r and r[TPUT] is not None else math.nan
            rows.append({"base": base_label(base), "method": method, "mode": mode,
                         "target_intvty": t, **_pick(vals), "values": vals})
    return rows


def al_families(series: dict[tuple, Series]) -> dict[tuple, list[Series]]:
    """(base, method, k) -> its injected series over the AL (at least two ALs), by AL."""
    fams: dict[tuple, list[Series]] = defaultdict(list)
    for (base, cfg), s in series.items():
        if cfg.mode == "injected" and cfg.al is not None:
            fams[(base, cfg.method, cfg.k)].append(s)
    return {k: sorted(v, key=lambda s: s.config.al or 0.0)
            for k, v in fams.items() if len(v) >= 2}


def break_even(als: Sequence[float], ratios: Sequence[float]) -> float | None:
    """The AL where the ratio reaches 1, linear between the measured ALs (first crossing
    upwards); None when every measured AL is on one side."""
    pts = sorted((a, r) for a, r in zip(als, ratios, strict=True) if math.isfinite(r))
    for (a0, r0), (a1, r1) in itertools.pairwise(pts):
        if r0 < 1.0 <= r1:
            return a0 + (1.0 - r0) / (r1 - r0) * (a1 - a0)
    return None


def al_map(series: dict[tuple, Series]) -> list[dict[str, Any]]:
    """Per family and load: the interactivity ratio to plain at each injected AL, the
    realised ALs, and the break-even AL."""
    rows = []
    for (base, method, k), fam in sorted(al_families(series).items(), key=str):
        plain = series.get((base, SpecConfig()))
        loads = sorted({c for s in fam for c in s.by_conc})
        for conc in loads:
            pi, how = plain_at(plain, conc, INTVTY) if plain else (None, "none")
            ratios, realised = {}, {}
            for s in fam:
                st = s.stat(conc, INTVTY)
                al = s.config.al or 0.0
                ratios[al] = st.mean / pi.mean if st and pi and pi.mean > 0 else math.nan
                got = [float(p["spec_realised_al"]) for p in s.by_conc.get(conc, ())
                       if isinstance(p.get("spec_realised_al"), int | float)]
                realised[al] = sum(got) / len(got) if got else math.nan
            be = break_even(list(ratios), list(ratios.values()))
            note = "" if be is not None else _no_break_even(ratios, k)
            rows.append({"base": base_label(base), "method": method, "k": k, "conc": conc,
                         "plain_match": how, "ratios": ratios, "realised": realised,
                         "break_even_al": be if be is not None else math.nan, "note": note})
    return rows


def _no_break_even(ratios: dict[float, float], k: int) -> str:
    """Why an AL map row has no break-even: every AL on one side of 1 (the best AL measured
    and what it gave; an AL is at most k + 1), or no plain match."""
    finite = {al: r for al, r in ratios.items() if math.isfinite(r)}
    if not finite:
        return "no plain match"
    best = max(finite, key=lambda al: finite[al])
    if finite[best] < 1:
        return (f"below 1 at every measured AL (best: AL {best:g} gives {finite[best]:.2f}x; "
                f"AL is at most k+1 = {k + 1})")
    return "at or above 1 at every measured AL"
