"""scenario.kind -> workload. Adding a workload: one module and one entry here; config
validation reads the same names from harness/config/kinds.py (checked here at import)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config import kinds

if TYPE_CHECKING:
    from harness.config.schema import SweepConfig
    from harness.workloads.base import Workload

_WORKLOADS = {
    "fixed": ("harness.workloads.fixed_seq", "FixedSequenceWorkload"),
    "agentic": ("harness.workloads.agentic_lanes", "AgenticLaneWorkload"),
    "timestamped": ("harness.workloads.timestamped", "TimestampedReplayWorkload"),
}
WORKLOAD_KINDS = tuple(_WORKLOADS)
if WORKLOAD_KINDS != kinds.WORKLOAD_KINDS:  # config validation reads harness.config.kinds
    raise ImportError(f"harness/workloads/registry.py maps {WORKLOAD_KINDS}, "
                      f"harness/config/kinds.py names {kinds.WORKLOAD_KINDS}")


def make_workload(sc: SweepConfig, tokenizer: Any, root: Path) -> Workload:
    """Built (traces loaded and checked included) before any engine starts."""
    module, name = _WORKLOADS[sc.scenario.kind]
    return getattr(importlib.import_module(module), name)(sc, tokenizer, root)
