"""The regression gate: compare a candidate run with a baseline, point by point and along the
frontiers at matched interactivity.

Validity first: a point invalid on either side is reported, not compared. With repeats on both
sides a change is a regression only when it is significant (Welch's t-test) *and* larger than
the threshold, like asv; with single runs the threshold alone decides, and the report says so.
Exit codes: 0 pass, 1 regression, 2 invalid or unusable input.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from harness.curves import interpolate_at, pareto_frontier, series_key, series_label

# metric -> True when higher is better
METRICS = {"tput_per_gpu": True, "output_tput_per_gpu": True, "median_intvty": True,
           "p99_intvty": True, "median_ttft": False, "p99_ttft": False, "median_tpot": False,
           "median_e2el": False, "p90_e2e_intvty": True}
DEFAULT_METRICS = ("tput_per_gpu", "median_intvty", "median_ttft")
# Fields that identify a point across runs (the engine version, image and harness revision are
# what a gate compares, so they are not part of the match).
MATCH_FIELDS = ("model", "precision", "chip", "engine", "spec_method", "spec_k",
                "spec_acceptance_mode", "spec_acceptance_length", "tp", "ep", "dp_attention",
                "pp", "gpus", "scenario", "scenario_kind", "isl", "osl", "conc")


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


@dataclass
class GateReport:
    comparisons: list[Comparison] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    threshold: float = 0.05
    alpha: float = 0.05
    mode: str = ""

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.regression]

    @property
    def exit_code(self) -> int:
        if self.regressions:
            return 1
        if self.invalid or not self.comparisons:
            return 2
        return 0

    @property
    def verdict(self) -> str:
        return {0: "PASS", 1: "REGRESSION", 2: "INVALID INPUT"}[self.exit_code]


def match_key(p: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(p.get(f) for f in MATCH_FIELDS)


def point_label(p: dict[str, Any]) -> str:
    return f"{series_label(series_key(p))} · {p.get('scenario')} · conc {p.get('conc')}"


def _group(points: Sequence[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        out[match_key(p)].append(p)
    return out


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


def gate(baseline: Sequence[dict[str, Any]], candidate: Sequence[dict[str, Any]],
         metrics: Sequence[str] = DEFAULT_METRICS, threshold: float = 0.05,
         alpha: float = 0.05) -> GateReport:
    rep = GateReport(threshold=threshold, alpha=alpha)
    bg, cg = _group(baseline), _group(candidate)
    repeats = min([len(v) for v in bg.values()] + [len(v) for v in cg.values()] or [0])
    rep.mode = ("repeats on both sides: Welch t-test and threshold" if repeats >= 2
                else "single runs: threshold only (no significance test possible)")
    for key in sorted(set(bg) | set(cg), key=str):
        b, c = bg.get(key, []), cg.get(key, [])
        label = point_label((b or c)[0])
        if not b or not c:
            rep.unmatched.append(f"{label} (only in {'candidate' if c else 'baseline'})")
            continue
        bad = [p for p in b + c if not p.get("valid", False)]
        if bad:
            side = "baseline" if any(p in b for p in bad) else "candidate"
            why = (bad[0].get("invalid_reasons") or ["invalid"])[0].splitlines()[0]
            rep.invalid.append(f"{label}: invalid in the {side} ({why})")
            continue
        for metric in metrics:
            hb = METRICS.get(metric, True)
            bv = [float(p[metric]) for p in b if p.get(metric) is not None]
            cv = [float(p[metric]) for p in c if p.get(metric) is not None]
            if not bv or not cv:
                continue
            change, pval, reg, note = compare_samples(bv, cv, hb, threshold, alpha)
            rep.comparisons.append(Comparison(label, metric, float(np.mean(bv)),
                                              float(np.mean(cv)), change, len(bv), len(cv),
                                              pval, reg, note))
    rep.comparisons += frontier_comparisons(baseline, candidate, threshold, alpha)
    return rep


def _frontier_points(points: Sequence[dict[str, Any]], x: str, y: str) -> tuple[list, list]:
    xs = [p.get(x) for p in points]
    ys = [p.get(y) for p in points]
    idx = pareto_frontier([v if v is not None else math.nan for v in xs],
                          [v if v is not None else math.nan for v in ys])
    return [xs[i] for i in idx], [ys[i] for i in idx]


def frontier_comparisons(baseline: Sequence[dict[str, Any]], candidate: Sequence[dict[str, Any]],
                         threshold: float, alpha: float, x: str = "median_intvty",
                         y: str = "tput_per_gpu") -> list[Comparison]:
    """Throughput along each series' frontier at matched interactivity: at every baseline
    frontier x that every repeat's frontier on both sides covers (a curve of at least two
    points), interpolated with the monotone spline, never extrapolated."""
    def series(points):
        out: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
        for p in points:
            if p.get("valid"):
                out[(series_key(p), p.get("scenario"))][int(p.get("repeat") or 0)].append(p)
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
            change, pval, reg, note = compare_samples(bv, cv, True, threshold, alpha)
            out.append(Comparison(f"frontier {series_label(key[0])} · {key[1]} @ {x}="
                                  f"{target:.4g}", y, float(np.mean(bv)), float(np.mean(cv)),
                                  change, len(bv), len(cv), pval, reg, note))
    return out


def to_markdown(rep: GateReport, baseline: str, candidate: str) -> str:
    lines = [f"## Performance gate: **{rep.verdict}**", "",
             f"Baseline `{baseline}` vs candidate `{candidate}`; threshold "
             f"{100 * rep.threshold:g}%, {rep.mode}.", ""]
    if rep.regressions:
        lines += ["### Regressions", ""]
        lines += [f"- {c.what}: {c.metric} {c.baseline:.4g} → {c.candidate:.4g} "
                  f"({100 * c.change:+.1f}%" + (f", p={c.p_value:.3g}" if c.p_value is not None
                                               else "") + ")" for c in rep.regressions]
        lines.append("")
    if rep.invalid:
        lines += ["### Not compared (invalid)", ""] + [f"- {s}" for s in rep.invalid] + [""]
    if rep.unmatched:
        lines += ["### Unmatched points", ""] + [f"- {s}" for s in rep.unmatched] + [""]
    lines += ["### All comparisons", "",
              "| point | metric | baseline | candidate | change | p | verdict |",
              "|---|---|---:|---:|---:|---:|---|"]
    for c in rep.comparisons:
        p = "-" if c.p_value is None else f"{c.p_value:.3g}"
        lines.append(f"| {c.what} | {c.metric} | {c.baseline:.4g} | {c.candidate:.4g} | "
                     f"{100 * c.change:+.1f}% | {p} | "
                     f"{'REGRESSION' if c.regression else 'ok'} |")
    return "\n".join(lines) + "\n"


def to_json(rep: GateReport) -> dict[str, Any]:
    return {"verdict": rep.verdict, "exit_code": rep.exit_code, "threshold": rep.threshold,
            "alpha": rep.alpha, "mode": rep.mode, "invalid": rep.invalid,
            "unmatched": rep.unmatched,
            "comparisons": [asdict(c) for c in rep.comparisons]}
