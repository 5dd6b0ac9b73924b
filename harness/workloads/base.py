"""The workload interface: what to send, when, and what makes its points trustworthy.

A workload is built from the config before any engine starts (bad input fails there), tells
the engine what it needs (`EngineHints`), builds its requests (`prepare`), runs one load level
on a client (`run`), and judges what only it can judge (`rules`). Fixed sequence and agentic
lanes are its implementations (`harness.workloads.registry`); the runner never asks which.

A workload kind is a plug-in: its class says what a scenario of its kind may ask for (the
class flags below), refuses the rest (`check`), and lays out the sweep's load axis
(`load_axis`). The check step (`harness.workloads.registry.check_kinds`) asks it, so the
config rules and the runner do not branch on the scenario's kind. How its points are read
(one curve or one per speculator, sessions, the shape) are its traits (`traits`), recorded on
every point it measures (`facts`), so publishing asks the point, never the kind's name
(harness.record.workload_traits).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.client.streaming import ClientSettings, PhaseResult
from harness.config.schema import SweepConfig
from harness.engines import prometheus
from harness.engines.hints import EngineHints
from harness.engines.sampler import Sampled
from harness.record.validity import Rule, ValiditySettings
from harness.record.workload_traits import WorkloadTraits
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
Locate = Callable[[str], str]


def stream_body(model_name: str, sampling: dict[str, Any], extras: dict[str, Any]) -> dict:
    """Fields every streamed request carries (OpenAI-compatible, plus `ignore_eos`).

    `temperature: 0.0` unless the scenario's sampling says otherwise: InferenceX's client
    sends it on every request (docs/methodology.md §2)."""
    body: dict[str, Any] = {
        "model": model_name,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
        "temperature": 0.0,
    }
    body.update(sampling)
    body.update(extras)
    return body


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
    # What a scenario of this kind may ask for; the check step refuses the rest, naming the key.
    open_loop_arrivals = False  # scenario.arrival other than closed (docs/slo.md)
    searchable = False  # search.mode=slo: a bisection over the load axis
    profilable = False  # engine.profile: the profiler window around the measured phase
    reads_traces = False  # scenario.dataset: a trace corpus to replay
    sends_correlation_ids = False  # scenario.correlation_headers (AIPerf's request style)
    # Synthetic prompt text: speculator.acceptance.mode=auto injects the published acceptance
    # (real drafts on synthetic text are not representative; docs/methodology.md §5).
    synthetic_text = False
    describes = "a scenario"  # how errors name the kind ("fixed-sequence scenarios")
    # Requests whose reply has no inter-token time are left out of TPOT (AgentX's rule for
    # agentic replays, where a turn may answer in one token).
    drops_zero_tpot = False
    # How its points are read (harness.record.workload_traits.WorkloadTraits says what each
    # means); recorded on every point, so readers never ask which kind wrote it.
    merges_speculative_curve = False
    has_sessions = False
    fixed_shape = False
    load_means = "concurrent requests"

    @classmethod
    def traits(cls) -> WorkloadTraits:
        return WorkloadTraits(merges_speculative_curve=cls.merges_speculative_curve,
                              has_sessions=cls.has_sessions, fixed_shape=cls.fixed_shape,
                              load_means=cls.load_means)

    @classmethod
    def check(cls, sc: SweepConfig, where: Locate) -> None:
        """Refuse what this kind cannot run (a ConfigError naming file, key and fix), before
        anything is built. Nothing beyond the class flags by default."""
        return None

    @classmethod
    def open_loop(cls, sc: SweepConfig) -> bool:
        """Points are offered request rates (open loop), not concurrencies."""
        return cls.open_loop_arrivals and sc.scenario.arrival != "closed"

    @classmethod
    def load_axis(cls, sc: SweepConfig) -> list[float]:
        """The sweep's load levels: request rates when open loop, else concurrencies."""
        if cls.open_loop(sc):
            return [float(r) for r in sc.scenario.request_rate]
        return [float(c) for c in sc.concurrency]

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
        """What the point records from its workload (pure): the kind's traits and what it
        measured (`measured_facts`)."""
        return {**self.traits().fields(), **self.measured_facts(meas, metrics, samples)}

    def measured_facts(self, meas: Measurement, metrics: Mapping[str, Any],
                       samples: Sampled = ()) -> dict[str, Any]:
        """Workload-specific metrics and facts recorded on the point (pure). `samples`: the
        server's /metrics scraped through the measured window (harness.engines.sampler)."""
        return dict(meas.extra)

    def rules(self, metrics: Mapping[str, Any], s: ValiditySettings) -> list[Rule]:
        """Validity rules only this workload can judge (pure)."""
        return []
