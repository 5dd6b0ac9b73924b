"""What a workload needs from the engine it runs on: the one record a workload hands an engine
adapter (engines sit below workloads, so the record lives here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EngineHints:
    """What a workload needs from the engine it runs on."""

    prefix_caching: bool  # False: random prompts must never hit a warm cache
    longest_request_tokens: int  # prompt + output of the longest request it will send
    # Running requests the engine must admit per unit of concurrency (AgentX: 2, headroom for
    # sub-agent fan-out).
    running_per_concurrency: int = 1
