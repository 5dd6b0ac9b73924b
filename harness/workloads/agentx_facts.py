"""AgentX's aggregate figures of an agentic point, under our names (harness/catalogue/agentx.py):
what InferenceX's agentic aggregation reports beyond the core metrics (docs/upstream/agentx.md
§2.2-2.3a). Pure functions of the measured records and the server samples."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.engines.sampler import Sampled
from harness.workloads.base import Measurement


def agentx_facts(meas: Measurement, metrics: Mapping[str, Any],
                 samples: Sampled = ()) -> dict[str, Any]:
    return {}
