"""Client self-check figures beyond the core ones (queue delay, stamp-error bound,
workers): issue 10."""

from __future__ import annotations

from harness.catalogue.base import Metric

METRICS: list[Metric] = []
