"""An SLO given as point statistics (`search.criteria`, docs/slo.md): each criterion, and
whether a point meets them all. Pure; `harness.sweep.search` searches with it and the
dashboard draws it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_LAT = re.compile(r"^(?P<stat>[\w.]+)_(?P<lat>ttft|tpot|itl|e2el)_ms$")


@dataclass(frozen=True, slots=True)
class Criterion:
    """One statistic and its bound: `key` as written in search.criteria, `metric` the point's
    key, `scale` from the point's unit to the bound's, `upper`: the value must not exceed it."""

    key: str
    metric: str
    bound: float
    upper: bool
    scale: float = 1.0

    def value(self, point: Mapping[str, Any]) -> float:
        v = point.get(self.metric)
        return float(v) * self.scale if isinstance(v, int | float) else math.nan

    def margin(self, point: Mapping[str, Any]) -> float:
        """value / bound for an upper bound, bound / value for a lower one: <= 1 passes."""
        v = self.value(point)
        if math.isnan(v):
            return math.inf
        if self.upper:
            return v / self.bound
        return self.bound / v if v > 0 else math.inf


def criteria(spec: Mapping[str, float]) -> list[Criterion]:
    """search.criteria -> criteria (the keys were checked by harness.config.validate_slo)."""
    out = []
    for key, bound in spec.items():
        k = key.replace("p50_", "median_")
        if m := _LAT.match(k):
            out.append(Criterion(key, f"{m['stat']}_{m['lat']}", float(bound), True, 1e3))
        elif k == "goodput_share":
            out.append(Criterion(key, "goodput_share", float(bound), False))
        else:  # <stat>_intvty: at least
            out.append(Criterion(key, k, float(bound), False))
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    breach: str | None  # the criterion (or "invalid") that failed first, by margin
    value: float | None
    bound: float | None
    margins: dict[str, float]


def judge(point: Mapping[str, Any], crit: list[Criterion]) -> Verdict:
    margins = {c.key: c.margin(point) for c in crit}
    if not point.get("valid"):
        reasons = point.get("invalid_reasons") or ["invalid"]
        return Verdict(False, f"invalid: {str(reasons[0])[:200]}", None, None, margins)
    worst = max(crit, key=lambda c: c.margin(point))
    ok = all(m <= 1.0 for m in margins.values())
    return Verdict(ok, None if ok else worst.key, worst.value(point), worst.bound, margins)
