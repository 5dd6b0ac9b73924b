"""The agentic replay scheduler's settings (docs/replay.md, docs/settings.md): each default is
upstream's (AIPerf as InferenceX runs it); the other values name this harness's earlier rules
or an alternative, and are refused here when unknown."""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.config.validate_scenario import CORRELATION_HEADERS
from harness.workloads.replay_plan import JOIN_RULES, PACINGS, START_SEEDS, SUBAGENT_STARTS
from harness.workloads.replay_sessions import RECYCLES, REQUEST_STYLES, SESSION_AFFINITIES


@dataclass
class ReplaySettings:
    duration_s: float
    # inf or None: no cap
    idle_cap_s: float | None = 10.0  # whole system idle: every pending timer moves (AIPerf: 10 s)
    tree_cap_s: float | None = 300.0  # one tree idle: its timers move (InferenceX: 300 s)
    warmup_requests_per_lane: int = 10
    start_min: float = 0.25
    start_max: float = 0.75
    api: str = "completions"
    join_rule: str = "tiered"  # tiered (AIPerf's loader) | next_turn (its older rule)
    pacing: str = "end_to_start"  # end_to_start | think_time | start_to_start
    split_chains: bool = True  # parallel chains of one agent replay as their own streams
    primer_start: str = "spread"  # spread (AIPerf's default) | burst
    window: str = "requests"  # requests: first send..last end of kept records | deadline
    start_seed: str = "trace_lane"  # t*'s seed (replay_plan.START_SEEDS)
    recycle: str = "shared"  # which trace a lane plays next (replay_sessions.RECYCLES)
    subagent_start: str = "branch_start"  # replay_plan.SUBAGENT_STARTS
    request_style: str = "aiperf"  # replay_sessions.REQUEST_STYLES
    session_affinity: str = "stream"  # replay_sessions.SESSION_AFFINITIES
    # headers that also carry each request's X-Correlation-ID (CORRELATION_HEADERS)
    correlation_headers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("idle_cap_s", "tree_cap_s"):
            cap = getattr(self, name)
            cap = math.inf if cap is None else float(cap)
            if math.isnan(cap) or cap < 0:
                raise ValueError(f"replay {name}={cap}: use a number >= 0, or inf for no cap")
            setattr(self, name, cap)
        for name, value, allowed in (("join_rule", self.join_rule, JOIN_RULES),
                                     ("pacing", self.pacing, PACINGS),
                                     ("primer_start", self.primer_start, ("spread", "burst")),
                                     ("window", self.window, ("requests", "deadline")),
                                     ("start_seed", self.start_seed, START_SEEDS),
                                     ("recycle", self.recycle, RECYCLES),
                                     ("subagent_start", self.subagent_start, SUBAGENT_STARTS),
                                     ("request_style", self.request_style, REQUEST_STYLES),
                                     ("session_affinity", self.session_affinity,
                                      SESSION_AFFINITIES)):
            if value not in allowed:
                raise ValueError(f"replay {name}={value!r}: use one of {', '.join(allowed)}")
        self.correlation_headers = tuple(self.correlation_headers)
        for h in self.correlation_headers:
            if h not in CORRELATION_HEADERS:
                raise ValueError(f"replay correlation_headers={h!r}: use any of "
                                 f"{', '.join(CORRELATION_HEADERS)}")
