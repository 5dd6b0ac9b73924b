"""The workload interface: what to send, when, and what makes its points trustworthy.

A workload is built from the config before any engine starts (bad input fails there), tells
the engine what it needs (`EngineHints`), builds its requests (`prepare`), runs one load level
on a client (`run`), and judges what only it can judge (`rules`). Fixed sequence and agentic
lanes are its implementations (`harness.workloads.registry`); the runner never asks which.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.client.streaming import ClientSettings, PhaseResult
from harness.engines import prometheus
from harness.engines.hints import EngineHints
from harness.engines.sampler import Sampled
from harness.record.validity import Rule, ValiditySettings
from harness.records import RequestRecord


@dataclass(frozen=True, slots=True)
class LoadLevel:
    """One point to measure."""

    point_id: str
    concurrency: int
    repeat: int
    seed: int  # the point's own seed (derived from the run seed)
    rate: float | None = None  # open loop: the offered request rate (req/s); None: closed

    @property
    def load(self) -> float:
        """The point's load on its axis: the rate when open loop, else the concurrency."""
        return self.rate if self.rate is not None else float(self.concurrency)


@dataclass(frozen=True, slots=True)
class Target:
    """A running server and how to talk to it."""

    base_url: str
    settings: ClientSettings
    scrape: Callable[[], prometheus.Sample]
    # Called right before the measured phase's first request and right after its last reply
    # (the engine's profiler, harness.engines.profiler); None: nothing to do.
    window_start: Callable[[], None] | None = None
    window_stop: Callable[[], None] | None = None


@dataclass
class Measurement:
    warmup: PhaseResult
    measured: PhaseResult
    server_before: prometheus.Sample
    server_after: prometheus.Sample
    extra: dict[str, Any] = field(default_factory=dict)  # workload facts for the point

    @property
    def records(self) -> list[RequestRecord]:
        return self.warmup.records + self.measured.records


OnDone = Callable[[RequestRecord], None] | None


@contextlib.contextmanager
def measured_window(target: Target) -> Iterator[None]:
    """The target's window hooks (the engine's profiler) right around the measured phase."""
    if target.window_start is not None:
        target.window_start()
    try:
        yield
    finally:
        if target.window_stop is not None:
            target.window_stop()


class Workload(ABC):
    kind: str = ""

    @abstractmethod
    def hints(self) -> EngineHints:
        """Known once the workload is built (before any engine starts)."""

    @abstractmethod
    def prepare(self, levels: list[LoadLevel], body: Mapping[str, Any]) -> None:
        """Build every request of these points (before any engine starts). `body` holds the
        fields every request carries (model, streaming, engine extras)."""

    @abstractmethod
    def run(self, target: Target, level: LoadLevel, on_done: OnDone = None) -> Measurement:
        """Measure one point on a running server."""

    def expected_requests(self, level: LoadLevel) -> int | None:
        """For a progress bar; None when the workload runs for a time instead."""
        return None

    def facts(self, meas: Measurement, metrics: Mapping[str, Any],
              samples: Sampled = ()) -> dict[str, Any]:
        """Workload-specific metrics and facts recorded on the point (pure). `samples`: the
        server's /metrics scraped through the measured window (harness.engines.sampler)."""
        return dict(meas.extra)

    def rules(self, metrics: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
        """Validity rules only this workload can judge (pure)."""
        return []
