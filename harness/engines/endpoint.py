"""Attach mode: an OpenAI-compatible server that is already running (engine=endpoint)."""

from __future__ import annotations

from typing import Any

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.engines.base import EngineAdapter, EngineConfigError, LaunchPlan, Locate


class EndpointAdapter(EngineAdapter):
    kind = "endpoint"

    @classmethod
    def validate(cls, sc: SweepConfig, where: Locate) -> None:
        if not sc.engine.url:
            raise ConfigError(where("engine.url"), "engine.url",
                              "engine=endpoint needs the URL of a running server",
                              "add engine.url=http://host:port")

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
