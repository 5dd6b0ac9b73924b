"""The speculation report: the tables of harness.publish.speedup, spec_choice and spec_cost as
Markdown (printed by `harness speculation` and at the end of `make run`) and CSV, and as
plain JSON-able rows for the dashboard's speculation view."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

from harness.publish.spec_choice import al_map, best_k_by_load, best_k_by_target
from harness.publish.spec_cost import cost_rows
from harness.publish.speedup import (
    NO_INTERVAL,
    Crossover,
    Ratio,
    crossovers,
    equal_concurrency,
    equal_interactivity,
    group_series,
)


def build(points: Iterable[dict[str, Any]], targets: Sequence[float] = (),
          include_invalid: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every table, as rows of plain values (ratios and crossovers as text and numbers)."""
    series = group_series(points, include_invalid)
    eq = equal_concurrency(series)
    return {
        "equal_concurrency": [_plain(r) for r in eq],
        "crossover": [_plain(r) for r in crossovers(eq)],
        "equal_interactivity": [_plain(r) for r in equal_interactivity(series, targets)],
        "best_k_by_load": [_plain(r) for r in best_k_by_load(series)],
        "best_k_by_target": [_plain(r) for r in best_k_by_target(series, targets)],
        "al_map": [_plain(r) for r in al_map(series)],
        "cost": [_plain(r) for r in cost_rows(series)],
    }


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k == "config":
            continue
        if isinstance(v, Ratio):
            out[k], out[k + "_se"] = v.value, v.se
        elif isinstance(v, Crossover):
            out[k] = v.text()
            out[k + "_value"] = v.conc
        elif v is None and k.endswith("_ratio"):
            out[k], out[k + "_se"] = math.nan, None
        elif isinstance(v, dict):
            out[k] = {str(a): b for a, b in v.items()}
        else:
            out[k] = v
    return out


TITLES = {
    "equal_concurrency": "Speedup at equal concurrency (speculative / plain, median "
                         "interactivity and throughput per GPU; ± one standard error over "
                         "repeats; plain_match interp = plain interpolated in log2(conc))",
    "crossover": "Crossover load: where the ratio falls below 1 (log2-linear between loads; "
                 "[range] from ratio ± one standard error)",
    "equal_interactivity": "Speedup at equal interactivity (throughput per GPU along both "
                           "frontiers, never extrapolated; ± one standard error over each "
                           "repeat's own frontiers)",
    "best_k_by_load": "Best k per load (median interactivity; margin over the runner-up)",
    "best_k_by_target": "Best k per interactivity target (throughput per GPU along each "
                        "frontier; margin over the runner-up)",
    "al_map": "Speedup against injected AL (interactivity ratio to plain; break-even AL "
              "linear between measured ALs)",
    "cost": "Why: the cost side from the engine's counters (verify cost: a drafting step in "
            "plain steps; speedup = tokens per step / step cost, the TPOT ratio split in two)",
}
COLUMNS = {
    "equal_concurrency": ("base", "speculator", "conc", "repeats", "plain_match",
                          "spec_intvty", "plain_intvty", "intvty_ratio", "spec_tput",
                          "plain_tput", "tput_ratio", "interval", "realised_al", "valid"),
    "crossover": ("base", "speculator", "crossover_conc", "tput_crossover_conc"),
    "equal_interactivity": ("base", "speculator", "target_intvty", "spec_tput", "plain_tput",
                            "tput_ratio", "interval"),
    "best_k_by_load": ("base", "method", "mode", "conc", "best", "runner_up", "margin",
                       "values"),
    "best_k_by_target": ("base", "method", "mode", "target_intvty", "best", "runner_up",
                         "margin", "values"),
    "al_map": ("base", "method", "k", "conc", "plain_match", "ratios", "realised",
               "break_even_al", "note"),
    "cost": ("base", "speculator", "conc", "drafts_per_step", "drafted_share", "accept_rate",
             "tokens_per_step", "verify_cost_plain_steps", "cost_plain_steps", "speedup",
             "why"),
}


def _cell(row: dict[str, Any], col: str) -> str:
    v = row.get(col)
    se = row.get(col + "_se")
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_num(x)}" for k, x in v.items())
    if col == "margin" and isinstance(v, float) and math.isfinite(v):
        return f"{100 * v:+.1f}%"
    if isinstance(v, float):
        text = _num(v)
        return text + (f" ± {se:.3f}" if isinstance(se, float) and text != "–" else "")
    return "" if v is None else str(v)


def _num(v: Any) -> str:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "–"
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


def one_repeat_note(tables: dict[str, list[dict[str, Any]]]) -> str:
    """One sentence when a ratio or crossover in the tables comes from a single repeat (it has
    no interval, and the reader must know before reading a ratio as a speedup)."""
    rows = [*tables.get("equal_concurrency", ()), *tables.get("equal_interactivity", ())]
    once = [r for r in rows if str(r.get("interval", "")).startswith(NO_INTERVAL)]
    if not once:
        return ""
    every = len(once) == len(rows)
    return (f"**{'Every' if every else 'Some'} comparison below comes from one repeat**"
            f" ({len(once)} of {len(rows)} ratio rows): {'its' if every else 'those'} ratios "
            "and crossovers have no interval, so a ratio near 1 is not evidence either way. "
            "Measure with `repeats=3` (or more) for mean ± one standard error.\n")


def to_markdown(tables: dict[str, list[dict[str, Any]]]) -> str:
    note = one_repeat_note(tables)
    out = [note] if note else []
    for name, rows in tables.items():
        if not rows:
            continue
        cols = COLUMNS[name]
        out += [f"### {TITLES[name]}", "", "| " + " | ".join(cols) + " |",
                "|" + "|".join("---" for _ in cols) + "|"]
        out += ["| " + " | ".join(_cell(r, c).replace("|", "/") for c in cols) + " |"
                for r in rows]
        out.append("")
    if len(out) <= 1:
        return ("(no speculative series with a matching plain series: same model, chip, "
                "engine, precision and scenario, valid points)\n")
    return "\n".join(out) + "– : no value (outside a frontier, or no plain match)\n"


def to_csv(tables: dict[str, list[dict[str, Any]]]) -> str:
    """One CSV for every table: a `table` column, then the union of their columns (each
    ratio followed by its standard error); a row leaves other tables' columns empty."""
    cols: list[str] = []
    for name, rows in tables.items():
        for c in COLUMNS[name]:
            for key in (c, c + "_se"):
                if key not in cols and any(key in r for r in rows):
                    cols.append(key)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["table", *cols])
    for name, rows in tables.items():
        for r in rows:
            w.writerow([name, *(_csv_value(r.get(c)) for c in cols)])
    return buf.getvalue()


def _csv_value(v: Any) -> Any:
    if isinstance(v, dict):
        return ";".join(f"{k}={_csv_value(x)}" for k, x in v.items())
    if isinstance(v, float) and not math.isfinite(v):
        return ""
    return "" if v is None else v
