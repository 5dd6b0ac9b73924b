"""engine.kind -> adapter class: the only list of engine kinds. An adapter class describes
itself (its counters, profiler endpoints, settings it applies and config rules), so adding an
engine is its module, one line here, and its recipe (recipes/engine/<kind>.yaml). An engine
kept outside this package registers itself (`register`) from a module named in
HARNESS_PLUGINS (docs/architecture.md shows one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.config.errors import ConfigError
from harness.config.kind_registry import KindRegistry

if TYPE_CHECKING:  # the registry is imported by the adapters' own helpers; no import cycle
    from harness.config.schema import SweepConfig
    from harness.engines.hints import EngineHints
    from harness.speculation.acceptance import AcceptancePlan

# kind -> (module, class); imported when first asked for, so naming the kinds is cheap
_ADAPTERS: dict[str, tuple[str, str]] = {
    "llamacpp": ("harness.engines.llamacpp", "LlamaCppAdapter"),
    "vllm": ("harness.engines.vllm", "VllmAdapter"),
    "sglang": ("harness.engines.sglang", "SglangAdapter"),
    "trtllm": ("harness.engines.trtllm", "TrtllmAdapter"),
    "atom": ("harness.engines.atom", "AtomAdapter"),
    "endpoint": ("harness.engines.endpoint", "EndpointAdapter"),
    "multinode": ("harness.engines.multinode", "MultinodeAdapter"),
}
ENGINE_KINDS = tuple(_ADAPTERS)  # the built-in kinds; engine_kinds() adds plug-ins
_REGISTRY = KindRegistry("engine", "engine.kind", _ADAPTERS, unknown="engine")
register = _REGISTRY.register  # a class decorator, for an adapter kept outside this package
engine_kinds = _REGISTRY.kinds


def adapter_class(kind: str) -> Any:
    """The adapter class of an engine kind; an unknown kind is a ConfigError."""
    return _REGISTRY.cls(kind)


def check_engine(sc: SweepConfig, where: Callable[[str], str]) -> Any:
    """A known engine kind whose adapter accepts the recipe (its own rules, before anything
    is built or launched); the adapter class."""
    kinds = engine_kinds()
    if sc.engine.kind not in kinds:
        raise ConfigError.at(where, "engine.kind",
                             f"unknown engine {sc.engine.kind!r}", f"use one of {kinds}")
    cls = adapter_class(sc.engine.kind)
    cls.check(sc, where)
    return cls


def make_adapter(sc: SweepConfig, acceptance: AcceptancePlan | None = None,
                 hints: EngineHints | None = None, where: Callable[[str], str] | None = None
                 ) -> Any:
    """A complete adapter: validated, then built with everything it will ever need."""
    return adapter_class(sc.engine.kind)(sc, acceptance, hints, where)
