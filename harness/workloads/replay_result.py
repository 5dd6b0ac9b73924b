"""What an agentic replay hands back (`ReplayResult`): its records, its measured window
(`measured_window`, ReplaySettings.window), the sessions it started and finished, each lane's
start point and the idle caps' jumps. One process's replay (harness.workloads.replay) or the
merge of several (harness.workloads.replay_split) builds it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.records import PHASE_MEASURED, RequestRecord
from harness.workloads.replay_clock import Jumps


@dataclass
class ReplayResult:
    records: list[RequestRecord]
    start_ts: float  # the measured window (settings.window)
    end_ts: float
    start_wall: float
    sessions_started: int = 0
    sessions_finished: int = 0
    profiling_start: float = math.nan  # when the warmup had drained
    deadline: float = math.nan
    start_points: list[float] = field(default_factory=list)  # t* per lane
    trees: list[tuple[int, str]] = field(default_factory=list)  # (lane, trace) as started
    jumps: Jumps = field(default_factory=Jumps)

    @property
    def duration_s(self) -> float:
        return self.end_ts - self.start_ts


def measured_window(records: list[RequestRecord], rule: str, t0: float, deadline: float
                    ) -> tuple[float, float]:
    """The measured window (ReplaySettings.window) over a replay's records."""
    kept = [r for r in records if r.phase == PHASE_MEASURED and r.ok]
    if rule == "requests" and kept:
        # AgentX divides by (last request end - first request start) of the kept records
        # (docs/upstream/agentx.md §2.2)
        return min(r.send_ts for r in kept), max(r.end_ts for r in kept)
    measured = [r.end_ts for r in records if r.phase == PHASE_MEASURED]
    return t0, max([deadline, *measured])
