"""Attach mode: an OpenAI-compatible server that is already running (engine=endpoint)."""

from __future__ import annotations

from typing import Any

from harness.engines.base import EngineAdapter, EngineConfigError, LaunchPlan


class EndpointAdapter(EngineAdapter):
    kind = "endpoint"

    def check(self) -> None:
        if not self.sc.engine.url:
            raise EngineConfigError("engine=endpoint needs engine.url")

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
