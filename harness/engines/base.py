"""The engine adapter interface: a recipe in, an argument list and environment out.

Each engine module (llamacpp, vllm, sglang, trtllm, endpoint) subclasses `EngineAdapter`. An
adapter never builds a shell string: `LaunchPlan.argv` goes straight to `subprocess.Popen`.
The shared lifecycle (free port, start, readiness, log, stop) lives in `process.py`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from harness.config.schema import SweepConfig


class EngineConfigError(ValueError):
    """A recipe this engine cannot run (raised before launch)."""


@dataclass
class LaunchPlan:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the harness's environment
    files: dict[str, str] = field(default_factory=dict)  # written to the launch dir first
    port: int = 0
    ready_paths: tuple[str, ...] = ("/health", "/v1/models")


@dataclass(frozen=True)
class SpecCounterNames:
    """Prometheus counters of speculative decoding (AL = 1 + accepted / drafts)."""

    drafts: str
    draft_tokens: str
    accepted: str


class EngineAdapter(ABC):
    kind: str = ""
    keep_alive: bool = True  # False: the server closes connections after each stream
    # Prometheus names of the prefix-cache counters (queries and hits, in tokens).
    prefix_cache_counters: tuple[str, str] | None = None
    spec_counters: SpecCounterNames | None = None

    def __init__(self, sc: SweepConfig) -> None:
        self.sc = sc
        # Agentic scenarios: the longest fitted request, set by the runner from the traces.
        self.request_tokens_override: int | None = None
        self.check()

    def check(self) -> None:  # noqa: B027 - optional hook
        """Refuse recipes this engine cannot run; called before anything is launched."""

    @property
    def precision(self) -> str:
        return self.sc.precision or self.sc.model.default_precision

    @property
    def served_model_name(self) -> str:
        m = self.sc.model
        return m.served_name or m.name

    @property
    def checkpoint(self) -> str:
        m = self.sc.model
        return m.checkpoints.get(self.precision, m.hf_id)

    @property
    def launches(self) -> bool:
        """False for attach mode: the server is already running."""
        return True

    @abstractmethod
    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        """argv + env that serve this recipe on `port` for up to `max_concurrency` requests."""

    def request_extras(self) -> dict[str, Any]:
        """Engine-specific fields added to every request body."""
        return {}

    def version(self, server_info: dict[str, Any]) -> str:
        """The running engine's version, from what the server said (or the installed one)."""
        return str(server_info.get("version", "unknown"))

    def context_per_request(self) -> int:
        """Tokens one request may need: ISL + OSL + margin (max-model-len)."""
        from harness.config.validate import CONTEXT_MARGIN

        if self.request_tokens_override is not None:
            return self.request_tokens_override + CONTEXT_MARGIN
        s = self.sc.scenario
        return s.isl + s.osl + CONTEXT_MARGIN
