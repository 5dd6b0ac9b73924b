"""The metric catalogue: what each emitted key means (label, unit, display scale, which
direction is better, definition). Gate, CLI choices, dashboard axes, report columns and tables
all read `CATALOGUE`. A new metric is one entry in its family's module (docs/metrics.md is
generated from here; a test keeps it current)."""

from __future__ import annotations

from harness.record.catalogue import agentx, client, core, energy, host, series, slo
from harness.record.catalogue.base import (
    E2E_INTVTY_PERCENTILES,
    HIGHER,
    INTVTY_STATS,
    LATENCIES,
    LOWER,
    NEUTRAL,
    PRICE_TIERS,
    STATS,
    Metric,
)

__all__ = ["CATALOGUE", "E2E_INTVTY_PERCENTILES", "HIGHER", "INTVTY_STATS", "LATENCIES", "LOWER",
           "NEUTRAL", "PRICE_TIERS", "STATS", "Metric", "catalogue_markdown", "metric",
           "ranked_metrics"]


def _join(*families: list[Metric]) -> dict[str, Metric]:
    out: dict[str, Metric] = {}
    for fam in families:
        for mt in fam:
            if mt.key in out:
                raise ValueError(f"metric {mt.key!r} is defined twice in harness/catalogue")
            out[mt.key] = mt
    return out


CATALOGUE: dict[str, Metric] = _join(core.METRICS, client.METRICS, agentx.METRICS,
                                     energy.METRICS, series.METRICS, slo.METRICS,
                                     host.METRICS)


def metric(key: str) -> Metric:
    """The catalogue entry of `key`; a KeyError naming the closest keys otherwise."""
    try:
        return CATALOGUE[key]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(key, list(CATALOGUE), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise KeyError(f"unknown metric {key!r}{hint}") from None


def ranked_metrics(group: str | None = None) -> list[str]:
    """Keys with a better direction (what a gate, axis or frontier can use)."""
    return [k for k, m in CATALOGUE.items()
            if m.direction != NEUTRAL and (group is None or m.group == group)]


def catalogue_markdown() -> str:
    """docs/metrics.md: every emitted key, from the catalogue (a test keeps the file current)."""
    lines = ["# Metrics", "",
             "Generated from `harness/record/catalogue/` (`harness metrics` prints it). "
             "Stored units "
             "are what points.jsonl holds; tables and charts show the display unit.", ""]
    groups: dict[str, list[Metric]] = {}
    for m in CATALOGUE.values():
        groups.setdefault(m.group, []).append(m)
    for group, ms in groups.items():
        lines += [f"## {group}", "", "| key | label | unit (shown) | better | definition |",
                  "|---|---|---|---|---|"]
        for m in ms:
            shown = m.unit + (f" ({m.display_unit})" if m.display_unit else "")
            lines.append(f"| `{m.key}` | {m.label} | {shown} | {m.direction} | "
                         f"{m.definition} |")
        lines.append("")
    return "\n".join(lines)
