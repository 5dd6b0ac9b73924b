"""Why a speculative point is as fast as it is: the cost side, from the engine's counters.

Per speculative point, from the counters the engine declared (harness/engines/counters.py;
the point keeps their deltas over the measured window as `spec_drafts`, `spec_draft_tokens`,
`spec_accepted_tokens`, `server_generation_tokens`):

    steps                    generated - accepted: every step emits one token of its own
                             plus the drafts it accepted (the prefill's token counts as one)
    tokens per step          generated / steps (steps without a draft count: the AL a
                             reader's speedup sees; the engine's AL counts drafting steps only)
    drafted steps            drafts / steps (an n-gram drafter proposes only where the text
                             repeats; a model drafter at every step)
    drafts per verify step   draft tokens / drafts; verify width = 1 + that
    step cost                median TPOT x tokens per step / plain median TPOT at the same
                             load: a mean step in plain steps
    verify cost              (steps x step cost - undrafted steps) / drafts: a drafting step
                             (draft + verify) in plain steps, taking an undrafted step as one

    speedup = tokens per step / step cost

The last line holds by construction (it is the median-TPOT ratio, split in two): it says which
factor moved, not a second measurement. A verify step costing more than half its width in plain
steps is compute-bound (verifying k drafts costs nearly k decode steps, as on a CPU or a GPU at
large batch); a cheaper one is memory-bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.publish.speedup import Series, SpecConfig, base_label, plain_at


def _num(p: dict[str, Any], key: str) -> float:
    v = p.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan


def step_figures(p: dict[str, Any]) -> dict[str, float]:
    """Counter-derived figures of one speculative point (NaN where a counter is missing)."""
    drafts, draft_tok = _num(p, "spec_drafts"), _num(p, "spec_draft_tokens")
    accepted, gen = _num(p, "spec_accepted_tokens"), _num(p, "server_generation_tokens")
    steps = gen - accepted if gen > accepted >= 0 else math.nan
    per_draft = draft_tok / drafts if drafts > 0 else math.nan
    return {"steps": steps, "drafts": drafts, "drafts_per_step": per_draft,
            "verify_tokens_per_step": 1.0 + per_draft,
            "tokens_per_step": gen / steps if steps > 0 else math.nan,
            "drafted_share": drafts / steps if steps > 0 else math.nan,
            "accept_rate": accepted / draft_tok if draft_tok > 0 else math.nan,
            "step_time_s": _num(p, "median_tpot") * (gen / steps if steps > 0 else math.nan)}


def priced(f: dict[str, float], plain_tpot: float | None) -> dict[str, float]:
    """The figures with the plain step's price: step cost, verify cost, the speedup split."""
    cost = f["step_time_s"] / plain_tpot if plain_tpot else math.nan
    steps, drafts = f["steps"], f["drafts"]
    verify = (steps * cost - (steps - drafts)) / drafts if drafts > 0 else math.nan
    if verify <= 0:  # undrafted steps ran faster than the plain reference (other load, noise)
        verify = math.nan
    return {**f, "cost_plain_steps": cost, "verify_cost_plain_steps": verify,
            "speedup": f["tokens_per_step"] / cost if cost > 0 else math.nan}


def regime(verify_cost: float, verify_width: float) -> str:
    if not (math.isfinite(verify_cost) and math.isfinite(verify_width)):
        return "unknown"
    return "compute-bound" if verify_cost > 0.5 * verify_width else "memory-bound"


def explain(f: dict[str, float]) -> str:
    """One sentence: what a drafting step costs, how often it happens, what it yields."""
    if not math.isfinite(f.get("cost_plain_steps", math.nan)):
        if math.isfinite(f.get("tokens_per_step", math.nan)):
            return (f"{f['tokens_per_step']:.2f} tokens per step; no plain point at this load "
                    "(nothing to price a step against)")
        return "no speculative counters on this point (published row, or metrics off)"
    if not math.isfinite(f["verify_cost_plain_steps"]):
        return (f"{f['tokens_per_step']:.2f} tokens per step at {f['cost_plain_steps']:.2f} "
                f"plain steps each = {f['speedup']:.2f}x; a drafting step's cost is not "
                "estimable: this point's steps ran faster than the plain reference's (measured "
                "under other load?)")
    word = regime(f["verify_cost_plain_steps"], f["verify_tokens_per_step"])
    return (f"{word}: verifying {f['drafts_per_step']:.1f} drafts costs "
            f"{f['verify_cost_plain_steps']:.1f} plain steps; drafts on "
            f"{100 * f['drafted_share']:.0f}% of steps, {100 * f['accept_rate']:.0f}% "
            f"accepted: {f['tokens_per_step']:.2f} tokens per step at "
            f"{f['cost_plain_steps']:.2f} plain steps each = {f['speedup']:.2f}x")


def cost_rows(series: dict[tuple, Series]) -> list[dict[str, Any]]:
    """One row per speculative series and load (counters summed over its repeats)."""
    rows = []
    for (base, cfg), s in sorted(series.items(), key=lambda kv: str(kv[0])):
        if cfg.plain:
            continue
        plain = series.get((base, SpecConfig()))
        for conc, pts in sorted(s.by_conc.items()):
            f = step_figures(_pooled(pts))
            if not math.isfinite(f["tokens_per_step"]):
                continue  # no speculative counters (a published row, metrics off)
            pt, how = plain_at(plain, conc, "median_tpot") if plain else (None, "none")
            f = priced(f, pt.mean if pt else None)
            rows.append({"base": base_label(base), "config": cfg, "speculator": cfg.label(),
                         "conc": conc, "plain_match": how, **f,
                         "regime": regime(f["verify_cost_plain_steps"],
                                          f["verify_tokens_per_step"]),
                         "why": explain(f)})
    return rows


def _pooled(pts: list[dict[str, Any]]) -> dict[str, float]:
    """Repeats' counters summed, their median TPOT averaged."""
    out: dict[str, float] = {}
    for key in ("spec_drafts", "spec_draft_tokens", "spec_accepted_tokens",
                "server_generation_tokens"):
        vals = [_num(p, key) for p in pts]
        out[key] = sum(vals) if all(math.isfinite(v) for v in vals) else math.nan
    tpots = [_num(p, "median_tpot") for p in pts if math.isfinite(_num(p, "median_tpot"))]
    out["median_tpot"] = sum(tpots) / len(tpots) if tpots else math.nan
    return out


def why_uncosted(p: dict[str, Any], points: Sequence[dict[str, Any]]) -> str:
    """Why a speculative point has no step cost, in the reader's words: the plain point at its
    load is missing or invalid (step costs price against valid plain points only), the point
    itself is invalid, or it carries no speculative counters."""
    from harness.publish.speedup import base_key, spec_config

    base, conc = base_key(p), p.get("conc")
    plain = [q for q in points if q.get("conc") == conc and base_key(q) == base
             and spec_config(q).plain and q.get("status", "ok") == "ok"]
    reasons = []
    if not plain:
        reasons.append("no plain point at this load")
    elif not any(q.get("valid", True) for q in plain):
        reasons.append("the plain point at this load is invalid")
    if not p.get("valid", True):
        reasons.append("this point is invalid")
    if not math.isfinite(step_figures(p)["tokens_per_step"]):
        reasons.append("no speculative counters on this point")
    return "no step cost: " + ("; ".join(reasons) or "nothing to price it against")
