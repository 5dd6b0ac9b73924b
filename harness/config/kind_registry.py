"""A registry of kinds (engine adapters, workloads): the built-in kinds as (module, class)
imported when first asked for, so naming the kinds is cheap, plus classes registered by
plug-in modules named in HARNESS_PLUGINS (docs/architecture.md shows one). It sits in the
config layer so that both registries, and the config rules that name kinds, can use it."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from harness.config.errors import ConfigError

PLUGINS_ENV = "HARNESS_PLUGINS"  # comma-separated modules importable on sys.path


def load_plugins() -> None:
    """Import every module HARNESS_PLUGINS names (each registers its kinds on import)."""
    for name in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ConfigError(f"the environment variable {PLUGINS_ENV}", PLUGINS_ENV,
                              f"cannot import plug-in module {name!r}: {e}",
                              "put the module's directory on PYTHONPATH, or drop it from "
                              f"{PLUGINS_ENV}") from None


class KindRegistry:
    """`what` names the thing (engine, workload); `key` is the config key that chooses it;
    `unknown` how an error calls a name that is none of them."""

    def __init__(self, what: str, key: str, builtin: Mapping[str, tuple[str, str]],
                 unknown: str) -> None:
        self.what, self.key, self.builtin, self.unknown = what, key, dict(builtin), unknown
        self.plugged: dict[str, Any] = {}

    def register(self, cls: Any) -> Any:
        """Register a class kept outside the package (a class decorator)."""
        if cls.kind in self.builtin or not cls.kind:
            raise ValueError(f"{self.what} kind {cls.kind!r} is taken or empty")
        self.plugged[cls.kind] = cls
        return cls

    def kinds(self) -> tuple[str, ...]:
        load_plugins()
        return (*self.builtin, *self.plugged)

    def cls(self, kind: str) -> Any:
        """The class of `kind`; an unknown kind is a ConfigError (the check step names the
        file it came from first, wherever it runs)."""
        if kind in self.builtin:
            module, name = self.builtin[kind]
            return getattr(importlib.import_module(module), name)
        load_plugins()
        if kind not in self.plugged:
            raise ConfigError("the config", self.key, f"unknown {self.unknown} {kind!r}",
                              f"use one of {self.kinds()}")
        return self.plugged[kind]
