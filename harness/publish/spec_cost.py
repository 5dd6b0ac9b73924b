"""Why a speculative point is as fast as it is: the cost side, from the engine's counters.

Per speculative point, from the counters the engine declared (harness/engines/counters.py;
the point keeps their deltas over the measured window as `spec_drafts`, `spec_draft_tokens`,
`spec_accepted_tokens`, `server_generation_tokens`):

    drafts per verify step   draft tokens / drafts (what the drafter proposed per step)
    verify tokens per step   1 + drafts per step (the target model's forward width)
    tokens per step          generated / (generated - accepted): every step emits one token
                             of its own plus the drafts it accepted (steps without a draft
                             count, so this is the AL a reader's speedup sees)
    step time                median TPOT x tokens per step (one draft + verify round)
    cost in plain steps      step time / the plain series' median TPOT at the same load
    predicted speedup        tokens per step / cost in plain steps

The predicted speedup is what the counters explain; the measured ratio is beside it. A step
whose cost grows with its width (cost > half its verify tokens) is compute-bound: verifying
costs nearly as much as decoding those tokens one by one; a cheap one is memory-bound.
"""

from __future__ import annotations

import math
from typing import Any

from harness.publish.speedup import Series, SpecConfig, base_label, plain_at


def _num(p: dict[str, Any], key: str) -> float:
    v = p.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan


def step_figures(p: dict[str, Any]) -> dict[str, float]:
    """Counter-derived figures of one speculative point (NaN where a counter is missing)."""
    drafts, draft_tok = _num(p, "spec_drafts"), _num(p, "spec_draft_tokens")
    accepted, gen = _num(p, "spec_accepted_tokens"), _num(p, "server_generation_tokens")
    per_step = draft_tok / drafts if drafts > 0 else math.nan
    tokens_per_step = gen / (gen - accepted) if gen > accepted >= 0 else math.nan
    tpot = _num(p, "median_tpot")
    return {"drafts_per_step": per_step, "verify_tokens_per_step": 1.0 + per_step,
            "tokens_per_step": tokens_per_step,
            "accept_rate": accepted / draft_tok if draft_tok > 0 else math.nan,
            "step_time_s": tpot * tokens_per_step}


def regime(cost_steps: float, verify_tokens: float) -> str:
    if not (math.isfinite(cost_steps) and math.isfinite(verify_tokens)):
        return "unknown"
    return "compute-bound" if cost_steps > 0.5 * verify_tokens else "memory-bound"


def explain(f: dict[str, float]) -> str:
    """One sentence: what a step costs and what it yields."""
    if not math.isfinite(f.get("cost_plain_steps", math.nan)):
        if math.isfinite(f.get("tokens_per_step", math.nan)):
            return (f"{f['tokens_per_step']:.2f} tokens per step; no plain point at this load "
                    "to price a step against")
        return "no speculative counters on this point (published row, or metrics off)"
    word = regime(f["cost_plain_steps"], f["verify_tokens_per_step"])
    return (f"{word}: verifying {f['drafts_per_step']:.1f} drafts costs "
            f"{f['cost_plain_steps']:.1f} plain steps and yields {f['tokens_per_step']:.2f} "
            f"tokens, so {f['predicted_speedup']:.2f}x predicted")


def cost_rows(series: dict[tuple, Series]) -> list[dict[str, Any]]:
    """One row per speculative series and load (the mean over its repeats)."""
    rows = []
    for (base, cfg), s in sorted(series.items(), key=lambda kv: str(kv[0])):
        if cfg.plain:
            continue
        plain = series.get((base, SpecConfig()))
        for conc, pts in sorted(s.by_conc.items()):
            figs = [step_figures(p) for p in pts]
            f = {k: _fmean([g[k] for g in figs]) for k in figs[0]}
            if not math.isfinite(f["tokens_per_step"]):
                continue  # no speculative counters (a published row, metrics off)
            pt, how = plain_at(plain, conc, "median_tpot") if plain else (None, "none")
            cost = f["step_time_s"] / pt.mean if pt and pt.mean > 0 else math.nan
            f["cost_plain_steps"] = cost
            f["predicted_speedup"] = f["tokens_per_step"] / cost if cost > 0 else math.nan
            rows.append({"base": base_label(base), "config": cfg, "speculator": cfg.label(),
                         "conc": conc, "plain_match": how, **f,
                         "regime": regime(cost, f["verify_tokens_per_step"]),
                         "why": explain(f)})
    return rows


def _fmean(v: list[float]) -> float:
    fin = [x for x in v if math.isfinite(x)]
    return sum(fin) / len(fin) if fin else math.nan


def point_cost(p: dict[str, Any], plain_tpot: float | None) -> dict[str, Any]:
    """The same for one point, for its page (plain TPOT at its load, when known)."""
    f = step_figures(p)
    cost = f["step_time_s"] / plain_tpot if plain_tpot else math.nan
    f["cost_plain_steps"] = cost
    f["predicted_speedup"] = f["tokens_per_step"] / cost if cost > 0 else math.nan
    return {**f, "why": explain(f)}
