"""The regression gate: compare a candidate run with a baseline, point by point and along the
frontiers at matched interactivity.

Points match by identity (`PointIdentity.match_key`); matched points whose engine or scenario
settings differ are "not comparable", with what differs. Validity next: a point invalid on
either side is reported, not compared. With repeats on both sides a change is a regression only
when it is significant (Welch's t-test) *and* larger than the threshold, like asv; with single
runs the threshold alone decides, and the report says so. Each change carries its interval
from repeats (Welch's, at 1 - alpha: it excludes 0 exactly when the t-test is significant);
a change from single runs says it has none. A baseline point the candidate lacks
fails the gate (a change that breaks a load level must not pass) unless the comparison is
narrowed to a subset. Directions come from the metric catalogue (harness.record.metrics).
Exit codes: 0 pass, 1 regression or missing points, 2 invalid or not comparable input.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from harness.publish.curves import interpolate_at, pareto_frontier, series_label
from harness.record.metrics import metric
from harness.record.point_record import PointRecord
from harness.record.spec_names import spec_label

DEFAULT_METRICS = ("tput_per_gpu", "median_intvty", "median_ttft")


@dataclass
class Comparison:
    what: str  # point label or "frontier <series> @ x"
    metric: str
    baseline: float
    candidate: float
    change: float  # relative, signed so that negative = worse
    n_baseline: int
    n_candidate: int
    p_value: float | None
    regression: bool
    note: str = ""
    # the relative change's interval at 1 - alpha (signed as `change`); None from single runs
    interval: tuple[float, float] | None = None

    def interval_text(self) -> str:
        if self.interval is None:
            return "none: single run"
        lo, hi = self.interval
        return f"[{100 * lo:+.1f}%, {100 * hi:+.1f}%]"


@dataclass
class GateReport:
    comparisons: list[Comparison] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    not_comparable: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # baseline points the candidate lacks
    unmatched: list[str] = field(default_factory=list)  # candidate points the baseline lacks
    threshold: float = 0.05
    alpha: float = 0.05
    mode: str = ""

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.regression]

    @property
    def exit_code(self) -> int:
        if self.regressions or self.missing:
            return 1
        if self.invalid or self.not_comparable or not self.comparisons:
            return 2
        return 0

    @property
    def verdict(self) -> str:
        if self.exit_code == 1:
            return "REGRESSION" if self.regressions else "MISSING POINTS"
        if self.exit_code == 2:
            return "NOT COMPARABLE" if self.not_comparable else "INVALID INPUT"
        return "PASS"


def point_label(p: PointRecord) -> str:
    """One gate line per matched point: what differs between two points of one scenario and
    load (the speculator by its own name, k and injected AL: agentic plain and speculative
    points share a series) is in the line."""
    i = p.identity
    load = f"conc {i.conc}" if i.rate is None else f"rate {i.rate:g}/s ({i.arrival})"
    # where plain and speculative points share a series, the plain one says so too
    shown = i.spec_method != "none" or p.traits.merges_speculative_curve
    spec = f" · {spec_label(p)}" if shown else ""
    return f"{i.model} {i.precision} · {i.chip} · {i.engine}{spec} · {i.scenario} · {load}"


def _group(points: Sequence[PointRecord]) -> dict[tuple[Any, ...], list[PointRecord]]:
    out: dict[tuple[Any, ...], list[PointRecord]] = defaultdict(list)
    for p in points:
        out[p.identity.match_key()].append(p)
    return out


def narrow(points: Sequence[PointRecord], only: dict[str, str]) -> list[PointRecord]:
    """Points whose identity fields match every `key=value` of `only` (as text)."""
    return [p for p in points
            if all(str(getattr(p.identity, k)) == v for k, v in only.items())]


def _by_settings(b: list[PointRecord], c: list[PointRecord]
                 ) -> dict[str, tuple[list[PointRecord], list[PointRecord]]]:
    """Matched points split by their settings (a run may hold the same load level under two
    scenario settings; each is compared with its own kind)."""
    out: dict[str, tuple[list[PointRecord], list[PointRecord]]] = {}
    for side, points in ((0, b), (1, c)):
        for p in points:
            key = "/".join(str(v) for v in p.identity.settings().values())
            out.setdefault(key, ([], []))[side].append(p)
    return out


def _settings_difference(b: Sequence[PointRecord], c: Sequence[PointRecord]) -> str:
    """'' when every point on both sides ran with the same settings, else what differs."""
    diffs = []
    for key in ("engine_settings", "scenario_settings"):
        bs = {p.identity.settings()[key] for p in b}
        cs = {p.identity.settings()[key] for p in c}
        if bs != cs:
            diffs.append(f"{key.replace('_', ' ')} differ (baseline {', '.join(map(str, bs))}, "
                         f"candidate {', '.join(map(str, cs))})")
    return "; ".join(diffs)


SLO_FIELDS = ("slo_ttft_ms", "slo_tpot_ms", "slo_e2el_ms")


def slo_difference(b: Sequence[PointRecord], c: Sequence[PointRecord]) -> str:
    """'' when both sides judged goodput against the same SLOs (docs/slo.md), else what
    differs: goodput under different objectives is not comparable."""
    def objectives(points: Sequence[PointRecord]) -> set[tuple]:
        return {tuple(p.get(k) for k in SLO_FIELDS) for p in points}
    bs, cs = objectives(b), objectives(c)
    return "" if bs == cs else f"SLOs differ (baseline {sorted(bs, key=str)}, candidate " \
                               f"{sorted(cs, key=str)})"


def compare_samples(base: Sequence[float], cand: Sequence[float], higher_better: bool,
                    threshold: float, alpha: float) -> tuple[float, float | None, bool, str]:
    """(signed relative change, p-value or None, regression?, note)."""
    b, c = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    bm, cm = float(b.mean()), float(c.mean())
    if bm == 0 or not math.isfinite(bm) or not math.isfinite(cm):
        return math.nan, None, False, "not comparable (zero or missing baseline)"
    change = (cm - bm) / abs(bm)
    worse = -change if higher_better else change
    if len(b) >= 2 and len(c) >= 2:
        if b.std() == 0 and c.std() == 0:
            p = 0.0 if bm != cm else 1.0
        else:
            p = float(stats.ttest_ind(b, c, equal_var=False).pvalue)
        reg = worse > threshold and p < alpha
        return (change if higher_better else -change), p, reg, ""
    return ((change if higher_better else -change), None, worse > threshold,
            "single run: threshold only")


def change_interval(base: Sequence[float], cand: Sequence[float], higher_better: bool,
                    alpha: float) -> tuple[float, float] | None:
    """The relative change's two-sided 1 - alpha interval from repeats (Welch: unequal
    variances, Welch-Satterthwaite degrees of freedom), signed as compare_samples' change
    (negative = worse); None below two runs on either side."""
    b, c = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    bm = float(b.mean())
    if len(b) < 2 or len(c) < 2 or bm == 0 or not math.isfinite(bm):
        return None
    diff = float(c.mean()) - bm
    vb, vc = float(b.var(ddof=1)) / len(b), float(c.var(ddof=1)) / len(c)
    se = math.sqrt(vb + vc)
    half = 0.0
    if se > 0:
        df = (vb + vc) ** 2 / (vb ** 2 / (len(b) - 1) + vc ** 2 / (len(c) - 1))
        half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    lo, hi = (diff - half) / abs(bm), (diff + half) / abs(bm)
    return (lo, hi) if higher_better else (-hi, -lo)


def gate(baseline: Sequence[PointRecord], candidate: Sequence[PointRecord],
         metrics: Sequence[str] = DEFAULT_METRICS, threshold: float = 0.05,
         alpha: float = 0.05, only: dict[str, str] | None = None) -> GateReport:
    """Point by point, then along the frontiers. Every baseline point must be in the
    candidate (narrow both sides with `only` to compare a subset)."""
    rep = GateReport(threshold=threshold, alpha=alpha)
    if only:
        baseline, candidate = narrow(baseline, only), narrow(candidate, only)
    bg, cg = _group(baseline), _group(candidate)
    repeats = min([len(v) for v in bg.values()] + [len(v) for v in cg.values()] or [0])
    rep.mode = ("repeats on both sides: Welch t-test and threshold" if repeats >= 2
                else "single runs: threshold only (no significance test possible, and no "
                "change carries an interval)")
    comparable: list[PointRecord] = []
    for key in sorted(set(bg) | set(cg), key=str):
        b, c = bg.get(key, []), cg.get(key, [])
        label = point_label((b or c)[0])
        if not c:
            rep.missing.append(f"{label} (in the baseline, not in the candidate)")
        elif not b:
            rep.unmatched.append(f"{label} (only in the candidate)")
        elif diff := _settings_difference(b, c):
            rep.not_comparable.append(f"{label}: not comparable: {diff}")
        else:
            for settings, (bs, cs) in _by_settings(b, c).items():
                sub = label if len(_by_settings(b, c)) == 1 else f"{label} [{settings}]"
                if bad := [p for p in bs + cs if not p.valid]:
                    side = "baseline" if any(p in bs for p in bad) else "candidate"
                    why = (bad[0].reasons or [f"status {bad[0].status}"])[0].splitlines()[0]
                    rep.invalid.append(f"{sub}: invalid in the {side} ({why})")
                    continue
                comparable += [*bs, *cs]
                names = list(metrics)
                if (slo_diff := slo_difference(bs, cs)) and any(
                        m.startswith(("goodput", "slo_")) for m in names):
                    rep.not_comparable.append(f"{sub}: goodput not comparable: {slo_diff}")
                    names = [m for m in names if not m.startswith(("goodput", "slo_"))]
                rep.comparisons += _point_comparisons(sub, bs, cs, names, threshold, alpha)
    ok = {id(p) for p in comparable}
    rep.comparisons += frontier_comparisons([p for p in baseline if id(p) in ok],
                                            [p for p in candidate if id(p) in ok],
                                            threshold, alpha)
    return rep


def _point_comparisons(label: str, b: list[PointRecord], c: list[PointRecord],
                       metrics: Sequence[str], threshold: float,
                       alpha: float) -> list[Comparison]:
    out = []
    for name in metrics:
        hb = metric(name).higher_is_better
        bv = [float(p.get(name)) for p in b if p.get(name) is not None]
        cv = [float(p.get(name)) for p in c if p.get(name) is not None]
        if not bv or not cv:
            continue
        change, pval, reg, note = compare_samples(bv, cv, hb, threshold, alpha)
        out.append(Comparison(label, name, float(np.mean(bv)), float(np.mean(cv)), change,
                              len(bv), len(cv), pval, reg, note,
                              change_interval(bv, cv, hb, alpha)))
    return out


def _frontier_points(points: Sequence[PointRecord], x: str, y: str) -> tuple[list, list]:
    xs = [p.get(x) for p in points]
    ys = [p.get(y) for p in points]
    idx = pareto_frontier([v if v is not None else math.nan for v in xs],
                          [v if v is not None else math.nan for v in ys],
                          metric(x).higher_is_better, metric(y).higher_is_better)
    return [xs[i] for i in idx], [ys[i] for i in idx]


def frontier_comparisons(baseline: Sequence[PointRecord], candidate: Sequence[PointRecord],
                         threshold: float, alpha: float, x: str = "median_intvty",
                         y: str = "tput_per_gpu") -> list[Comparison]:
    """Throughput along each series' frontier at matched interactivity: at every baseline
    frontier x that every repeat's frontier on both sides covers (a curve of at least two
    points), interpolated with the monotone spline, never extrapolated. Valid points only."""
    def series(points: Sequence[PointRecord]) -> dict[tuple, dict[int, list]]:
        out: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
        for p in points:
            if p.valid:
                i = p.identity
                out[(p.series_key(), i.scenario, i.scenario_settings)][i.repeat].append(p)
        return out

    bs, cs = series(baseline), series(candidate)
    out = []
    for key in sorted(set(bs) & set(cs), key=str):
        b_fronts = [_frontier_points(v, x, y) for v in bs[key].values()]
        c_fronts = [_frontier_points(v, x, y) for v in cs[key].values()]
        if any(len(fx) < 2 for fx, _ in b_fronts + c_fronts):
            continue  # a single point is no curve; the point comparisons cover it
        xs = sorted({round(v, 6) for fx, _ in b_fronts for v in fx})
        for target in xs:
            bv = [interpolate_at(fx, fy, target) for fx, fy in b_fronts]
            cv = [interpolate_at(fx, fy, target) for fx, fy in c_fronts]
            if not all(math.isfinite(v) for v in bv + cv):
                continue  # outside some repeat's measured frontier
            change, pval, reg, note = compare_samples(bv, cv, metric(y).higher_is_better,
                                                      threshold, alpha)
            out.append(Comparison(f"frontier {series_label(key[0])} · {key[1]} @ {x}="
                                  f"{target:.4g}", y, float(np.mean(bv)), float(np.mean(cv)),
                                  change, len(bv), len(cv), pval, reg, note,
                                  change_interval(bv, cv, metric(y).higher_is_better,
                                                  alpha)))
    return out


def to_markdown(rep: GateReport, baseline: str, candidate: str) -> str:
    lines = [f"## Performance gate: **{rep.verdict}**", "",
             f"Baseline `{baseline}` vs candidate `{candidate}`; threshold "
             f"{100 * rep.threshold:g}%, {rep.mode}.", ""]
    if rep.regressions:
        lines += ["### Regressions", ""]
        lines += [f"- {c.what}: {c.metric} {c.baseline:.4g} → {c.candidate:.4g} "
                  f"({100 * c.change:+.1f}%" + (f", p={c.p_value:.3g}" if c.p_value is not None
                                               else "") + f", interval {c.interval_text()})"
                  for c in rep.regressions]
        lines.append("")
    if rep.missing:
        lines += ["### Missing from the candidate (narrow with --only to compare a subset)",
                  ""] + [f"- {s}" for s in rep.missing] + [""]
    if rep.not_comparable:
        lines += ["### Not comparable", ""] + [f"- {s}" for s in rep.not_comparable] + [""]
    if rep.invalid:
        lines += ["### Not compared (invalid)", ""] + [f"- {s}" for s in rep.invalid] + [""]
    if rep.unmatched:
        lines += ["### Unmatched points", ""] + [f"- {s}" for s in rep.unmatched] + [""]
    lines += ["### All comparisons", "",
              f"| point | metric | baseline | candidate | change | "
              f"interval ({100 * (1 - rep.alpha):g}%) | p | verdict |",
              "|---|---|---:|---:|---:|---|---:|---|"]
    for c in rep.comparisons:
        p = "-" if c.p_value is None else f"{c.p_value:.3g}"
        lines.append(f"| {c.what} | {c.metric} | {c.baseline:.4g} | {c.candidate:.4g} | "
                     f"{100 * c.change:+.1f}% | {c.interval_text()} | {p} | "
                     f"{'REGRESSION' if c.regression else 'ok'} |")
    return "\n".join(lines) + "\n"


def to_json(rep: GateReport) -> dict[str, Any]:
    return {"verdict": rep.verdict, "exit_code": rep.exit_code, "threshold": rep.threshold,
            "alpha": rep.alpha, "mode": rep.mode, "invalid": rep.invalid,
            "not_comparable": rep.not_comparable, "missing": rep.missing,
            "unmatched": rep.unmatched,
            "comparisons": [asdict(c) for c in rep.comparisons]}
