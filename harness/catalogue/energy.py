"""Measured power and energy from accelerator telemetry, beside the table-based figures: issue 9."""

from __future__ import annotations

from harness.catalogue.base import Metric

METRICS: list[Metric] = []
