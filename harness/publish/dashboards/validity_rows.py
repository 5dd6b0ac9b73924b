"""The point page's validity table as a reader reads it: each recorded rule (harness/record/
validity.py, bench_rules.py) with the observed value in its bound's unit and counts spelled
out; a passing rule reads as a pass, a failing one shows its sentence and fix."""

from __future__ import annotations

import re
from typing import Any


def shown(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def validity_rows(p: dict[str, Any]) -> list[dict[str, str]]:
    """The point's validity rules as a reader reads them: a passing rule says "pass" and what
    was observed against its bound; only a failing rule shows its failure sentence and fix
    (the stored `message` is worded for failure whatever the outcome)."""
    rows = []
    for r in p.get("validity") or []:
        if not isinstance(r, dict):
            continue
        ok, kept = bool(r.get("ok")), is_kept(r)
        rows.append({"rule": str(r.get("name", "")).replace("_", " "),
                     # any failed rule makes the point invalid; a fatal one marks it failed
                     "result": (WARNED if kept else "pass") if ok else
                               ("FAIL (point failed)" if r.get("fatal") else "FAIL"),
                     **observed_and_bound(r),
                     "detail": "" if ok and not kept else
                               f"{r.get('message', '')}; fix: {r.get('remedy', '')}"})
    return rows


# A rule whose setting is `warn` records a breach as ok, its message ending "(kept:
# validity.<rule>=warn)" (harness/record/bench_rules.py): it did not pass, the point was kept.
WARNED = "warning (kept)"


def is_kept(r: dict[str, Any]) -> bool:
    return "(kept: validity." in str(r.get("message", ""))


# Rules whose observed value is a count: what is counted, singular and plural.
COUNTED = {
    "any_request_succeeded": ("request succeeded", "requests succeeded"),
    "prompt_lengths": ("request with a prompt length other than built",
                       "requests with a prompt length other than built"),
    "usage_reported": ("reply without usage", "replies without usage"),
    "full_outputs": ("reply stopped short of max_tokens", "replies stopped short of max_tokens"),
    "bounded_outputs": ("reply over max_tokens", "replies over max_tokens"),
}
# `<= 10 ms`, `p99 <= 5 ms`, `<= 5% of CPU time`, `>= 30 completed requests`: the bound's
# number, whether it is a percentage, and the unit after it
_BOUND = re.compile(r"^(?:p\d+ )?(<=|>=|<|>) ?(-?[\d.]+(?:e-?\d+)?)(%?) ?(.*)$")


def _pct(share: float) -> str:
    v = 100 * share
    return f"{v:.2g}%" if abs(v) < 10 else f"{v:.3g}%"


def observed_and_bound(r: dict[str, Any]) -> dict[str, str]:
    """A rule's observed value in its bound's unit (a share against `5% of CPU time` as a
    percentage, a delay against `10 ms` in ms) and counts spelled out ("0 replies without
    usage" against "none"), so no row reads "0 0" or a fraction beside a percent."""
    obs, bound = r.get("observed"), str(r.get("bound", ""))
    if obs is None:
        return {"observed": "n/a", "bound": bound}
    number = isinstance(obs, int | float) and not isinstance(obs, bool)
    name = str(r.get("name", ""))
    if name in COUNTED and number:
        one, many = COUNTED[name]
        word = {"0": "none", ">= 1": "at least 1"}.get(bound, bound)
        return {"observed": f"{shown(obs)} {one if obs == 1 else many}", "bound": word}
    m = _BOUND.match(bound)
    if not (m and number):
        return {"observed": shown(obs), "bound": bound}
    _op, _num, pct, unit = m.groups()
    if unit.startswith("("):  # where the bound came from ("(default (docs/evals.md ...))")
        unit = ""
    text = _pct(float(obs)) if pct else shown(obs)
    return {"observed": f"{text} {unit}".strip() if unit else text, "bound": bound}
