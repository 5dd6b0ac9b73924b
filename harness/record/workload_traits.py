"""What a point's workload kind says about how its points are read: recorded on the point.

A workload class (harness/workloads/base.py) declares these traits; the point carries them as
fields written when it was measured, so readers (publish, the gate, exports, dashboards) ask
the point, never its kind's name. `traits_of` reads them back; `built_in_traits` answers for
points written before the fields existed and for the layers below workloads/, which cannot ask
a workload class.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class WorkloadTraits:
    # Speculative and plain points of one scenario are one curve (AgentX's agentic charts
    # merge them); False: one curve per speculator (InferenceX's fixed-sequence charts).
    merges_speculative_curve: bool = False
    # Load is a number of session trees replayed for a duration, with a fit and prefix-cache
    # hit rates (the AIPerf agentic export, InferenceX-app's canonical frontier winners).
    has_sessions: bool = False
    # Every request has the scenario's ISL/OSL, so the shape names the scenario; False: the
    # shape is a distribution the trace gave.
    fixed_shape: bool = False
    # What the point's `conc` counts, in words ("concurrent requests", "session trees").
    load_means: str = "concurrent requests"

    def fields(self) -> dict[str, Any]:
        """The fields a point carries (harness.workloads.base.Workload.facts writes them)."""
        return dataclasses.asdict(self)


TRAIT_FIELDS = tuple(f.name for f in dataclasses.fields(WorkloadTraits))

# Why a table keyed by kind here: points written before the traits were recorded, published
# rows, and the layers below workloads/ (validity settings, the identity hash) need the traits
# of the built-in kinds without a workload class. The classes state the same values
# (tests/record/test_workload_traits.py keeps the two equal); a plug-in kind records its own.
_BUILT_IN = {
    "fixed": WorkloadTraits(fixed_shape=True),
    "agentic": WorkloadTraits(merges_speculative_curve=True, has_sessions=True,
                              load_means="session trees"),
    "timestamped": WorkloadTraits(load_means="speed-up multiplier"),
}


def built_in_traits(kind: str) -> WorkloadTraits:
    """A built-in kind's traits; an unknown kind (a plug-in's point without recorded traits)
    reads as a fixed-sequence point, the shape every published row has."""
    return _BUILT_IN.get(kind, _BUILT_IN["fixed"])


class _Point(Protocol):
    """A flat point (a mapping) or a PointRecord: both answer `get` by the line's keys."""

    def get(self, key: str, default: Any = None) -> Any: ...


def traits_of(point: _Point) -> WorkloadTraits:
    """The traits a point recorded (a flat mapping or a PointRecord); the built-in kind's for
    a point written before they were."""
    fallback = built_in_traits(str(point.get("scenario_kind") or "fixed"))
    recorded = {name: point.get(name) for name in TRAIT_FIELDS}
    return dataclasses.replace(fallback, **{k: v for k, v in recorded.items() if v is not None})
