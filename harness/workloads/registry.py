"""scenario.kind -> workload. Adding a workload: one module and one entry here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config.schema import SweepConfig
from harness.workloads.base import Workload

WORKLOAD_KINDS = ("fixed", "agentic")


def make_workload(sc: SweepConfig, tokenizer: Any, root: Path) -> Workload:
    """Built (traces loaded and checked included) before any engine starts."""
    kind = sc.scenario.kind
    if kind == "fixed":
        from harness.workloads.fixed_seq import FixedSequenceWorkload

        return FixedSequenceWorkload(sc, tokenizer)
    if kind == "agentic":
        from harness.workloads.agentic_lanes import AgenticLaneWorkload

        return AgenticLaneWorkload(sc, tokenizer, root)
    raise ValueError(f"no workload for scenario kind {kind!r}; one of {WORKLOAD_KINDS}")
