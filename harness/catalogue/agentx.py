"""AgentX aggregate figures under our names (QPS windows, request accounting, server cache
by source, KV usage, stability): issue 12."""

from __future__ import annotations

from harness.catalogue.base import Metric

METRICS: list[Metric] = []
