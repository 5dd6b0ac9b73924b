"""The measuring bench's named choices (the client's transport, read path and agentic split),
each a known value; called by harness.config.validate's combination checks."""

from __future__ import annotations

from collections.abc import Callable

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig


def check_client_choices(sc: SweepConfig, where: Callable[[str], str]) -> None:
    """The client's named choices: each a known value."""
    if sc.client.transport not in ("aiohttp", "httptools"):
        raise ConfigError.at(where, "client.transport",
                             f"unknown transport {sc.client.transport!r}",
                             "use aiohttp (the default) or httptools (docs/client.md)")
    if sc.client.read_path not in ("compiled", "python"):
        raise ConfigError.at(where, "client.read_path",
                             f"unknown read path {sc.client.read_path!r}",
                             "use compiled (the default) or python (docs/client.md)")
    if sc.client.agentic_workers not in ("scheduler", "lanes"):
        raise ConfigError.at(where, "client.agentic_workers",
                             f"unknown split {sc.client.agentic_workers!r}",
                             "use scheduler (the default) or lanes (docs/replay.md)")
