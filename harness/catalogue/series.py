"""Figures summarised from the time series sampled through a point: issue 9."""

from __future__ import annotations

from harness.catalogue.base import Metric

METRICS: list[Metric] = []
