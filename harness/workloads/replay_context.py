"""Where a replayed request sits: its lane, session tree, cache-bust salt, sub-agent path,
phase and turn. The scheduler (harness.workloads.replay) fills it; the body builder
(harness.workloads.agentic_bodies) reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.records import PHASE_MEASURED
from harness.workloads.traces.model import Trace


@dataclass
class ReplayContext:
    """Where a request sits: its lane, session, salt, and sub-agent path."""

    lane: int
    session: str
    salt: object
    trace: Trace
    path: str = ""
    phase: str = PHASE_MEASURED
    turn: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
