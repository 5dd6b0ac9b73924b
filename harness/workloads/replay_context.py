"""Where a replayed request sits: its lane, session tree, cache-bust salt, sub-agent path,
phase and turn. The scheduler (harness.workloads.replay) fills it; the body builder
(harness.workloads.agentic_bodies) reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.records import PHASE_MEASURED
from harness.workloads.traces.model import Trace, TraceRequest


@dataclass
class ReplayContext:
    """Where a request sits: its lane, session, salt, and sub-agent path."""

    lane: int
    session: str
    salt: object
    trace: Trace
    path: str = ""
    phase: str = PHASE_MEASURED
    turn: int = 0  # the turn's index in its stream
    extra: dict[str, Any] = field(default_factory=dict)
    # The stream's requests in replay order, when the scheduler split an agent's parallel
    # chains (harness.workloads.replay_plan): `path` then names the chain ("agent_001:fa:001",
    # ":fa:002" for the root's); None: the stream is the agent's whole listing.
    chain: list[TraceRequest] | None = None
