"""`search.mode=slo`: the highest load (concurrency, or rate when open loop) whose points meet
an SLO given as point statistics (docs/slo.md). Pure: `SloSearch` says which load to measure
next and, once told each point's verdict, what the boundary is; the runner measures.

Bracket by doubling from `lo` (capped at `hi`), bisect between the highest passing and the
lowest failing load down to `resolution`, then measure both boundary loads `confirm` more times:
a load passes only if every one of its measurements passes, so a confirming failure moves the
boundary down and the bisection resumes. An invalid point fails (its load was not served as
asked). AIPerf's `max-concurrency-under-sla` (src/aiperf/search_recipes/
_max_concurrency_under_sla.py@6069528a, style `monotonic`) probes exponentially then bisects
the same way; docs/slo.md says where ours differs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from harness.record.slo_criteria import Criterion, Verdict, criteria, judge

__all__ = ["Criterion", "SloSearch", "Verdict", "criteria", "judge"]


@dataclass
class SloSearch:
    lo: float
    hi: float
    resolution: float
    confirm: int
    integer: bool  # concurrency: whole loads
    seen: dict[float, list[Verdict]] = field(default_factory=dict)
    order: list[tuple[float, str]] = field(default_factory=list)  # (load, point_id) measured

    def record(self, load: float, point_id: str, v: Verdict) -> None:
        self.seen.setdefault(load, []).append(v)
        self.order.append((load, point_id))

    def passes(self, load: float) -> bool:
        return all(v.ok for v in self.seen[load])

    def boundary(self) -> tuple[float | None, float | None]:
        """(highest passing load below the lowest failing one, lowest failing load)."""
        fails = [x for x in self.seen if not self.passes(x)]
        f = min(fails) if fails else None
        ok = [x for x in self.seen if self.passes(x) and (f is None or x < f)]
        return (max(ok) if ok else None), f

    def _mid(self, p: float, f: float) -> float:
        if self.integer:
            return float(math.floor((p + f) / 2))
        steps = math.floor((f - p) / self.resolution / 2) or 1
        return round(p + steps * self.resolution, 9)

    def next_load(self) -> float | None:
        """The next load to measure; None when the search is over."""
        if self.lo not in self.seen:
            return self.lo
        p, f = self.boundary()
        if p is None:  # the lowest load fails: nothing in range passes
            return self._confirming(self.lo)
        if f is None:
            if p >= self.hi:
                return self._confirming(p)
            return min(p * 2, self.hi)
        if f - p > self.resolution + 1e-9:
            mid = self._mid(p, f)
            if p < mid < f and mid not in self.seen:
                return mid
        return self._confirming(p, f)

    def _confirming(self, *loads: float) -> float | None:
        for x in loads:
            if len(self.seen.get(x, [])) < 1 + self.confirm:
                return x
        return None

    def result(self, crit: list[Criterion]) -> dict[str, Any]:
        """The boundary, the breaching metric, how sure, every point measured."""
        p, f = self.boundary()
        fail_v = next((v for v in self.seen[f] if not v.ok), None) if f is not None else None

        def sure(x: float | None) -> dict[str, Any] | None:
            if x is None:
                return None
            vs = self.seen[x]
            worst = {c.key: max(v.margins[c.key] for v in vs) for c in crit}
            return {"load": x, "measured": len(vs), "passed": sum(v.ok for v in vs),
                    "worst_margin": {k: _finite(m) for k, m in worst.items()}}

        return {
            "highest_passing": p, "lowest_failing": f,
            "breaching_metric": fail_v.breach if fail_v else None,
            "breaching_value": fail_v.value if fail_v else None,
            "breaching_bound": fail_v.bound if fail_v else None,
            "resolution": self.resolution,
            "resolved": p is not None and f is not None and f - p <= self.resolution + 1e-9,
            "passing_evidence": sure(p), "failing_evidence": sure(f),
            "criteria": {c.key: c.bound for c in crit},
            "points": [{"load": x, "point_id": pid} for x, pid in self.order],
            "num_points": len(self.order),
        }


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None
