"""Names a reader knows for the keys the pages show: the metric catalogue's label and unit,
with interactivity spelled as what it is (1 / TPOT, not TPOT) and the keys the catalogue does
not hold (speculator k, SLO bounds) named here. No page shows a raw key."""

from __future__ import annotations

import re
from typing import Any

from harness.record.catalogue import metric
from harness.record.workload_traits import traits_of

# Keys the catalogue does not describe, as a reader reads them.
EXTRA = {
    "conc": "Concurrency (requests in flight)",
    "rate": "Arrival rate (req/s)",
    "spec_k": "Speculator k (draft tokens per step)",
    "spec_acceptance_length": "Acceptance length requested (tokens per step)",
    "spec_realised_al": "Acceptance length realised (tokens per step)",
    "spec_drafts": "Drafting steps (engine counter)",
    "spec_draft_tokens": "Draft tokens (engine counter)",
    "spec_accepted_tokens": "Accepted draft tokens (engine counter)",
    "lossless_ok": "Lossless check passed",
    "lossless_verdict": "Lossless check",
    "power_valid": "Power telemetry valid",
}
_SLO = {"ttft": "TTFT", "tpot": "TPOT", "e2el": "E2E latency"}
_STAT = re.compile(r"^(median|mean|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")

# The illustrative chip: its prices and power are placeholders (recipes/chip/cpu.yaml).
ILLUSTRATIVE_CHIPS = ("cpu",)
CPU_CAVEAT = ("CPU prices and power are illustrative constants for a small VM "
              "(recipes/chip/cpu.yaml), not published figures: $/Mtok, tokens per $ and "
              "table-based J/token on cpu only show the mechanics")


def interactivity_label(label: str) -> str:
    """"Interactivity, median TPOT" -> "Interactivity, 1 / median TPOT": the axis is a rate."""
    return re.sub(r"^Interactivity, (.+) TPOT$", r"Interactivity, 1 / \1 TPOT", label)


# Energy from the chip table's constant, never to be read as a measurement.
TABLE_ENERGY = {"j_per_tok": "Joules per token (chip table's all-in power, not measured)",
                "tok_s_per_mw": "Tokens/s per MW (chip table's all-in power, not measured)"}


def label(key: str, with_unit: bool = True, shown: bool = True) -> str:
    """The reader's name for `key` with its unit appended: the display unit (`shown`, for
    values the page scales, seconds as ms) or the stored one (chart axes of stored values).
    Never the key itself unless nothing at all is known about it."""
    if key in EXTRA:
        return EXTRA[key]
    ms = " (ms)" if with_unit else ""
    m = re.fullmatch(r"slo_(ttft|tpot|e2el)_(ms|met_share)", key)
    if m:
        what = _SLO[m.group(1)]
        return (f"SLO bound, {what}{ms}" if m.group(2) == "ms"
                else f"Share of requests meeting the {what} SLO")
    m = _STAT.fullmatch(key)
    if m:
        stat = "median" if m.group(1) == "median" else m.group(1)
        return f"{_SLO.get(m.group(2), m.group(2).upper())}, {stat}{ms}"
    try:
        c = metric(key)
    except KeyError:
        return key.replace("_", " ")
    name = TABLE_ENERGY.get(key) or interactivity_label(c.label)
    unit = c.shown_unit if shown else c.unit
    return f"{name} ({unit})" if with_unit and unit else name


def load_text(p: dict[str, Any], short: bool = False) -> str:
    """A point's load as its run set it: an open-loop point by its arrival rate (its `conc` is
    the in-flight cap, 0 for none, never a concurrency), a closed-loop one by its concurrency.
    `short` for sibling links ("c2", "2 req/s")."""
    rate = p.get("rate")
    if rate is None:
        if short:
            return f"c{p.get('conc')}"
        counts = traits_of(p).load_means  # what conc counts: requests, session trees, ...
        return f"concurrency {p.get('conc')}" + (
            "" if counts == "concurrent requests" else f" ({counts})")
    if short:
        return f"{rate:g} req/s"
    cap = f", cap {p['conc']}" if p.get("conc") else ""
    return f"rate {rate:g} req/s ({p.get('arrival') or 'open loop'}{cap})"


def is_illustrative(p: dict[str, Any]) -> bool:
    return str(p.get("chip")) in ILLUSTRATIVE_CHIPS and not p.get("published")
