"""Attach mode: an OpenAI-compatible server that is already running (engine=endpoint)."""

from __future__ import annotations

from typing import Any

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.engines.base import (
    ENDPOINT_SETTINGS,
    EngineAdapter,
    EngineConfigError,
    LaunchPlan,
    Locate,
)
from harness.engines.counters import EngineCounters
from harness.engines.engine_counters import counters_of, declaring_kinds


class EndpointAdapter(EngineAdapter):
    kind = "endpoint"
    applies = ENDPOINT_SETTINGS
    reads_workspace = False
    samples_drafts = True  # the attached server was started with its own sampling flags
    one_node = False  # the attached server placed its own GPUs

    @classmethod
    def validate(cls, sc: SweepConfig, where: Locate) -> None:
        if not sc.engine.url:
            raise ConfigError.at(where, "engine.url",
                                 "engine=endpoint needs the URL of a running server",
                                 "add engine.url=http://host:port")
        family, known = sc.engine.family, declaring_kinds()
        if family is not None and family not in known:
            raise ConfigError.at(where, "engine.family",
                                 f"no engine family {family!r}",
                                 f"use one of {', '.join(known)}, or leave it unset to recognise "
                                 "the engine from its /metrics")

    @classmethod
    def family(cls, sc: SweepConfig) -> str | None:
        """The engine behind the URL, as engine.family declares it (None: unknown)."""
        return sc.engine.family

    @property
    def counters(self) -> EngineCounters:
        """The named family's metrics, else every known engine's (recognised per scrape)."""
        return counters_of(self.sc.engine.family or self.kind)

    @property
    def launches(self) -> bool:
        return False

    @property
    def base_url(self) -> str:
        return str(self.sc.engine.url).rstrip("/")

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        raise EngineConfigError("an attached endpoint is not launched")

    def version(self, server_info: dict[str, Any]) -> str:
        return str(server_info.get("version") or server_info.get("build_info") or "unknown")
