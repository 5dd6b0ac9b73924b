"""Where speculation pays: each speculative series against its matching plain series.

Pure functions of flat points (as `load_flat` reads them). A speculative configuration is
(method, k, acceptance mode, requested AL); its plain match has the same model, engine, chip,
precision and scenario (name and ISL/OSL) and no speculator. Three views:

- equal concurrency: interactivity (median, tok/s/user) and throughput per GPU, speculative
  over plain at the same load. A plain series without that exact load is interpolated in
  log2(concurrency) between its neighbours (marked `interp`), never extrapolated.
- equal interactivity: throughput per GPU at a target interactivity along both frontiers
  (harness.publish.curves.interpolate_on_frontier, never extrapolated).
- crossover: the load where the interactivity ratio falls below 1, interpolated in
  log2(concurrency); its range from the ratio +/- one standard error where repeats give one.

Only valid points count (as for frontiers); the rows say how many repeats each side had, and
a ratio or crossover from one repeat says it has no interval (`interval`), as the report's
text does (harness.publish.spec_report).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.publish.curves import interpolate_on_frontier
from harness.publish.ingest import is_published
from harness.record.spec_names import spec_name
from harness.record.workload_traits import traits_of

INTVTY = "median_intvty"
TPUT = "tput_per_gpu"


@dataclass(frozen=True, slots=True, order=True)
class SpecConfig:
    """One speculative configuration; method "none" is plain decoding. `method` holds the
    speculator's own name (spec_names.spec_name), which is the method for every speculator
    but those that share one (self_draft runs draft_model)."""

    method: str = "none"
    k: int = 0
    mode: str = "none"  # real | injected | published (an ingested row) | unrecorded
    al: float | None = None  # the requested (injected) AL; None for real acceptance

    @property
    def plain(self) -> bool:
        return self.method == "none"

    def label(self) -> str:
        if self.plain:
            return "plain"
        acc = (f"AL {self.al:g} injected" if self.mode == "injected" and self.al else
               "acceptance not recorded" if self.mode == "unrecorded" else self.mode)
        return f"{self.method}{f' k={self.k}' if self.k else ''} ({acc})"


def spec_config(p: dict[str, Any]) -> SpecConfig:
    """The point's speculative configuration, named as the user chose it (`self_draft`, not
    the method `draft_model` it runs: harness/record/spec_names.py)."""
    method = spec_name(p)
    if method == "none":
        return SpecConfig()
    al = p.get("spec_acceptance_length")
    # An ingested row records no acceptance mode; one of ours records real or injected (a
    # record from before acceptance plans, or built by hand, may have none): which of the two a
    # row is comes from its provenance, never from the missing field.
    mode = str(p.get("spec_acceptance_mode") or "none")
    if is_published(p):
        mode = "published"
    elif mode == "none":
        mode = "unrecorded"
    return SpecConfig(method, int(p.get("spec_k") or 0), mode,
                      round(float(al), 4) if mode == "injected" and al is not None else None)


def base_key(p: dict[str, Any]) -> tuple[str, ...]:
    """What a speculative series and its plain match share: model, chip, engine, precision
    and the scenario with its shape (published rows carry no scenario settings hash)."""
    shape = f"{p.get('scenario')} (ISL {p.get('isl')}, OSL {p.get('osl')})" \
        if traits_of(p).fixed_shape else str(p.get("scenario"))
    return (str(p.get("model")), str(p.get("chip")), str(p.get("engine")),
            str(p.get("precision")), shape)


def base_label(key: Sequence[str]) -> str:
    model, chip, engine, precision, scenario = key
    return f"{model} {precision} · {chip} · {engine} · {scenario}"


@dataclass(frozen=True, slots=True)
class Stat:
    """A metric over repeats: mean, standard error of the mean (None from one repeat), n."""

    mean: float
    se: float | None
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat | None:
        v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
        if not v:
            return None
        se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else None
        return cls(statistics.fmean(v), se, len(v))


@dataclass(frozen=True, slots=True)
class Ratio:
    value: float
    se: float | None  # delta method: relative errors added in quadrature

    @classmethod
    def of(cls, num: Stat, den: Stat) -> Ratio | None:
        if den.mean <= 0:
            return None
        r = num.mean / den.mean
        if num.se is None or den.se is None:
            return cls(r, None)
        rel = math.hypot(num.se / num.mean if num.mean else 0.0, den.se / den.mean)
        return cls(r, r * rel)

    def text(self) -> str:
        return f"{self.value:.3f}" + (f" ± {self.se:.3f}" if self.se is not None else "")


@dataclass
class Series:
    """The valid points of one configuration under one base, by concurrency."""

    base: tuple[str, ...]
    config: SpecConfig
    by_conc: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def points(self) -> list[dict[str, Any]]:
        return [p for ps in self.by_conc.values() for p in ps]

    def stat(self, conc: int, key: str) -> Stat | None:
        return Stat.of(p.get(key) for p in self.by_conc.get(conc, ()) if p.get(key) is not None)


def group_series(points: Iterable[dict[str, Any]], include_invalid: bool = False
                 ) -> dict[tuple, Series]:
    """(base, config) -> Series: valid points only, unless `include_invalid` (points whose
    requests completed but a validity rule flagged them, e.g. a busy client's timestamp
    error; failed points never count). Rows then say which loads had invalid points."""
    out: dict[tuple, Series] = {}
    for p in points:
        if p.get("status", "ok") != "ok" or not (include_invalid or p.get("valid", True)):
            continue
        if p.get("rate") is not None:
            # an open-loop point's load is its arrival rate; its `conc` is the in-flight cap
            # (0: none), not a concurrency to compare at (nor to interpolate in log2 of)
            continue
        base, cfg = base_key(p), spec_config(p)
        s = out.setdefault((base, cfg), Series(base, cfg))
        s.by_conc.setdefault(int(p["conc"]), []).append(p)
    return out


def plain_at(plain: Series, conc: int, key: str) -> tuple[Stat | None, str]:
    """The plain series' metric at `conc`: measured there ("exact"), else interpolated in
    log2(concurrency) between the nearest loads on either side ("interp"), else None."""
    s = plain.stat(conc, key)
    if s is not None:
        return s, "exact"
    have = sorted(c for c in plain.by_conc if plain.stat(c, key) is not None)
    lo = max((c for c in have if c < conc), default=None)
    hi = min((c for c in have if c > conc), default=None)
    if lo is None or hi is None:
        return None, "none"
    a, b = plain.stat(lo, key), plain.stat(hi, key)
    assert a is not None and b is not None
    w = (math.log2(conc) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    se = None if a.se is None or b.se is None else math.hypot((1 - w) * a.se, w * b.se)
    return Stat(a.mean + w * (b.mean - a.mean), se, min(a.n, b.n)), "interp"


def equal_concurrency(series: dict[tuple, Series]) -> list[dict[str, Any]]:
    """One row per speculative series and load: both metrics and their ratios."""
    rows = []
    for (base, cfg), s in sorted(series.items(), key=lambda kv: str(kv[0])):
        plain = series.get((base, SpecConfig()))
        if cfg.plain or plain is None:
            continue
        for conc in sorted(s.by_conc):
            si, st = s.stat(conc, INTVTY), s.stat(conc, TPUT)
            pi, how = plain_at(plain, conc, INTVTY)
            pt, _ = plain_at(plain, conc, TPUT)
            if pi is None:
                continue  # no plain load on both sides of this one: nothing to compare
            rows.append({
                "base": base_label(base), "config": cfg, "speculator": cfg.label(),
                "conc": conc, "repeats": f"{si.n if si else 0}/{pi.n if pi else 0}",
                "plain_match": how,
                "spec_intvty": si.mean if si else math.nan,
                "plain_intvty": pi.mean,
                "intvty_ratio": Ratio.of(si, pi) if si else None,
                "spec_tput": st.mean if st else math.nan,
                "plain_tput": pt.mean if pt else math.nan,
                "tput_ratio": Ratio.of(st, pt) if st and pt else None,
                "interval": interval_text(Ratio.of(si, pi) if si else None,
                                          si.n if si else 0, pi.n),
                "realised_al": _mean(s.by_conc[conc], "spec_realised_al"),
                "valid": "yes" if all(p.get("valid", True) for p in
                                      [*s.by_conc[conc], *plain.by_conc.get(conc, ())])
                else "NO",
            })
    return rows


NO_INTERVAL = "none: one repeat"


def interval_text(ratio: Ratio | None, n_spec: int, n_plain: int) -> str:
    """What a ratio's interval is, in words: one standard error over how many repeats, or
    why there is none (a side measured once has no spread to estimate)."""
    if ratio is None:
        return ""
    if ratio.se is not None:
        return f"± 1 SE over {n_spec}/{n_plain} repeats"
    once = [side for side, n in (("speculative", n_spec), ("plain", n_plain)) if n < 2]
    return NO_INTERVAL + ("" if len(once) == 2 else f" ({once[0]})" if once else "")


def _mean(points: Sequence[dict[str, Any]], key: str) -> float:
    v = [float(p[key]) for p in points if isinstance(p.get(key), int | float)]
    return statistics.fmean(v) if v else math.nan


@dataclass(frozen=True, slots=True)
class Crossover:
    """Where a ratio curve over load falls below 1. `conc` None: it never does over the
    measured loads (`kind` says which side); `lo`/`hi` the range from ratio -/+ one SE."""

    kind: str  # "crosses" | "always_above" | "always_below" | "rises" | "no_data"
    conc: float | None = None
    lo: float | None = None
    hi: float | None = None
    first_measured: int | None = None
    last_measured: int | None = None
    one_repeat: bool = False  # some load's ratio came from one repeat: no range

    def text(self) -> str:
        if self.kind == "no_data":
            return "no matched loads"
        if self.kind == "always_above":
            return f"> {self.last_measured} (faster at every measured load)"
        if self.kind == "always_below":
            return f"< {self.first_measured} (slower at every measured load)"
        if self.kind == "rises":
            return "none: slower at low load, faster at high load"
        assert self.conc is not None
        rng = "" if self.lo is None or self.hi is None else f" [{self.lo:.2g}, {self.hi:.2g}]"
        if not rng and self.one_repeat:
            rng = " (no interval: one repeat)"
        return f"{self.conc:.3g}{rng}"


def crossing(loads: Sequence[float], ratios: Sequence[float]) -> float | None:
    """The first load where the ratio goes from >= 1 to < 1, linear in log2(load)."""
    for (c0, r0), (c1, r1) in zip(zip(loads, ratios, strict=True),
                                  zip(loads[1:], ratios[1:], strict=True), strict=False):
        if r0 >= 1.0 > r1:
            w = (r0 - 1.0) / (r0 - r1)
            return 2 ** (math.log2(c0) + w * (math.log2(c1) - math.log2(c0)))
    return None


def crossover(rows: Sequence[dict[str, Any]], key: str = "intvty_ratio") -> Crossover:
    """The crossover load of one series' equal-concurrency rows (sorted by load)."""
    pts = sorted((r["conc"], r[key]) for r in rows if r.get(key) is not None)
    if not pts:
        return Crossover("no_data")
    loads = [float(c) for c, _ in pts]
    mid = [r.value for _, r in pts]
    first, last = int(loads[0]), int(loads[-1])
    at = crossing(loads, mid)
    if at is None:
        kind = ("always_below" if all(v < 1.0 for v in mid) else
                "always_above" if all(v >= 1.0 for v in mid) else "rises")
        return Crossover(kind, first_measured=first, last_measured=last)
    lo = hi = None
    if all(r.se is not None for _, r in pts):
        lo = crossing(loads, [r.value - (r.se or 0.0) for _, r in pts]) or loads[0]
        hi = crossing(loads, [r.value + (r.se or 0.0) for _, r in pts]) or loads[-1]
    return Crossover("crosses", at, lo, hi, first, last, one_repeat=lo is None)


def crossovers(eq_rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in eq_rows:
        groups[(r["base"], r["config"])].append(r)
    return [{"base": b, "config": cfg, "speculator": cfg.label(),
             "crossover_conc": crossover(rs), "tput_crossover_conc": crossover(rs, "tput_ratio")}
            for (b, cfg), rs in sorted(groups.items(), key=lambda kv: str(kv[0]))]


def overlap_targets(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], n: int = 4,
                    x: str = INTVTY) -> list[float]:
    """`n` interactivity targets spread over the range both frontiers cover (none if they
    do not overlap)."""
    ra, rb = (interpolate_on_frontier(s, 0.0, x, [TPUT]) for s in (a, b))
    if ra is None or rb is None:
        return []
    lo = max(ra["x_range"][0], rb["x_range"][0])
    hi = min(ra["x_range"][1], rb["x_range"][1])
    if lo > hi:
        return []
    if n == 1 or hi == lo:
        return [lo]
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def equal_interactivity(series: dict[tuple, Series], targets: Sequence[float] = (),
                        n_auto: int = 4) -> list[dict[str, Any]]:
    """Throughput per GPU at each target interactivity along the speculative and the plain
    frontier, and their ratio; targets default to `n_auto` spread over both ranges."""
    rows = []
    for (base, cfg), s in sorted(series.items(), key=lambda kv: str(kv[0])):
        plain = series.get((base, SpecConfig()))
        if cfg.plain or plain is None:
            continue
        sp, pp = s.points, plain.points
        for t in targets or overlap_targets(sp, pp, n_auto):
            a = interpolate_on_frontier(sp, t, INTVTY, [TPUT], out_of_range="none")
            b = interpolate_on_frontier(pp, t, INTVTY, [TPUT], out_of_range="none")
            ya = a[TPUT] if a else None
            yb = b[TPUT] if b else None
            se, n = repeat_spread(sp, pp, t)
            rows.append({"base": base_label(base), "config": cfg, "speculator": cfg.label(),
                         "target_intvty": t,
                         "spec_tput": ya if ya is not None else math.nan,
                         "plain_tput": yb if yb is not None else math.nan,
                         "tput_ratio": ya / yb if ya is not None and yb else math.nan,
                         "tput_ratio_se": se,
                         "interval": f"± 1 SE over {n} repeats" if se is not None else
                         NO_INTERVAL if n < 2 else "none: under 2 repeats reach this target"})
    return rows


def _by_repeat(points: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        out[int(p.get("repeat") or 0)].append(p)
    return out


def repeat_spread(spec: Sequence[dict[str, Any]], plain: Sequence[dict[str, Any]],
                  target: float) -> tuple[float | None, int]:
    """(standard error, repeats) of the throughput ratio at `target` interactivity, from each
    repeat's own pair of frontiers (a repeat both sides measured, whose frontiers both reach
    the target); the SE is None below two such repeats. `repeats` counts the repeats the
    points carry, so one repeat reads 1."""
    sr, pr = _by_repeat(spec), _by_repeat(plain)
    ratios = []
    for rep in sorted(set(sr) & set(pr)):
        a = interpolate_on_frontier(sr[rep], target, INTVTY, [TPUT], out_of_range="none")
        b = interpolate_on_frontier(pr[rep], target, INTVTY, [TPUT], out_of_range="none")
        if a and b and a[TPUT] is not None and b[TPUT]:
            ratios.append(a[TPUT] / b[TPUT])
    n = min(len(sr), len(pr))
    if len(ratios) < 2:
        return None, n
    return statistics.stdev(ratios) / math.sqrt(len(ratios)), n
