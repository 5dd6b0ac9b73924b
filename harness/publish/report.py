"""What a user sees at the end of a sweep: a table of its points, like `vllm bench serve`'s
result block but one row per point."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from harness.record.metrics import CATALOGUE
from harness.record.workload_traits import traits_of

# header, key, format; the display scale (seconds shown as ms) is the catalogue's.
_COLUMNS = (
    ("conc", "conc", "{:>5d}"),
    ("reqs", "num_requests", "{:>5d}"),
    ("fail", "num_failed", "{:>4d}"),
    ("dur s", "duration_s", "{:>7.1f}"),
    ("in tok/s", "input_tput", "{:>9.1f}"),
    ("out tok/s", "output_tput", "{:>9.1f}"),
    ("tok/s/gpu", "tput_per_gpu", "{:>9.1f}"),
    ("ttft p50", "median_ttft", "{:>8.1f}"),
    ("ttft p99", "p99_ttft", "{:>8.1f}"),
    ("tpot p50", "median_tpot", "{:>8.2f}"),
    ("tpot p99", "p99_tpot", "{:>8.2f}"),
    ("itl p50", "median_itl", "{:>8.2f}"),
    ("intvty", "median_intvty", "{:>7.1f}"),
)


# Shown when some point has them: the open-loop rate and send lag, goodput (docs/slo.md).
_OPTIONAL = (
    ("rate", "rate", "{:>6.2f}", 0),
    ("lag p99", "send_lag_p99_ms", "{:>7.2f}", 1),
    ("goodput", "goodput", "{:>7.2f}", None),
    ("good %", "goodput_share", "{:>6.1%}", None),
)


def columns(points: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The fixed columns, with the optional ones some point carries (rate first)."""
    cols = list(_COLUMNS)
    for head, key, fmt, at in _OPTIONAL:
        if any(p.get(key) is not None for p in points):
            cols.insert(at if at is not None else len(cols), (head, key, fmt))
    return cols


def _scale(key: str) -> float:
    m = CATALOGUE.get(key)
    return m.scale if m is not None else 1.0


def _cell(fmt: str, value: Any, scale: float) -> str:
    width = int(fmt.split(">")[1].split(".")[0].rstrip("d}%"))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-".rjust(width)
    return fmt.format(value * scale if scale != 1 else value)


def summary_table(points: Iterable[dict[str, Any]]) -> str:
    points = sorted(points, key=lambda p: (p.get("scenario", ""), p.get("spec_method", ""),
                                           p.get("rate") or 0, p.get("conc", 0),
                                           p.get("repeat", 0)))
    if not points:
        return "(no points)"
    cols = columns(points)
    head = " ".join(h.rjust(len(_cell(f, 0, 1))) for h, _, f in cols) + "  valid"
    lines = [head, "-" * len(head)]
    for p in points:
        row = " ".join(_cell(f, p.get(k), _scale(k)) for _, k, f in cols)
        lines.append(f"{row}  {'yes' if p.get('valid') else 'NO'}")
    first = points[0]
    traits = traits_of(first)
    shape = (f"ISL {first.get('isl')}, OSL {first.get('osl')}" if traits.fixed_shape
             else f"{first.get('fit')}, concurrency = {traits.load_means}")
    title = (f"{first.get('model')} {first.get('precision')} on {first.get('chip')} / "
             f"{first.get('engine')} ({first.get('engine_version')}), "
             f"{first.get('scenario')} ({shape}), speculator {first.get('spec_method')}")
    notes = []
    for p in points:
        for r in p.get("invalid_reasons") or ():
            notes.append(f"  {load_name(p)}: {r.splitlines()[0]}")
    out = ["", "=" * len(title), title, "=" * len(title), *lines,
           "times in ms; throughput over the measured window (warmup excluded); "
           "intvty = 1 / median TPOT (tok/s/user)"]
    if notes:
        out += ["invalid points:", *notes]
    return "\n".join(out)


def load_name(p: dict[str, Any]) -> str:
    """A point's load as its run set it: an open-loop point by its arrival rate (its `conc`
    is the in-flight cap, 0 for none), a closed-loop one by its concurrency."""
    if p.get("rate") is not None:
        cap = f", cap {p['conc']}" if p.get("conc") else ""
        return f"rate {p['rate']:g} req/s{cap}"
    return f"conc {p.get('conc')}"


def print_summary(points: Iterable[dict[str, Any]]) -> None:
    print(summary_table(points), flush=True)
