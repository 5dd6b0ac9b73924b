"""engine.kind -> adapter class. Adding an engine: one module here and one YAML; every other
list of engine kinds (config validation, choices) reads `ENGINE_KINDS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry stays importable from config validation without cycles
    from harness.config.schema import SweepConfig
    from harness.engines.base import EngineAdapter, Locate
    from harness.spec.acceptance import AcceptancePlan
    from harness.workloads.base import EngineHints

_ADAPTERS = {
    "llamacpp": ("harness.engines.llamacpp", "LlamaCppAdapter"),
    "vllm": ("harness.engines.vllm", "VllmAdapter"),
    "sglang": ("harness.engines.sglang", "SglangAdapter"),
    "trtllm": ("harness.engines.trtllm", "TrtllmAdapter"),
    "atom": ("harness.engines.atom", "AtomAdapter"),
    "endpoint": ("harness.engines.endpoint", "EndpointAdapter"),
}
ENGINE_KINDS = tuple(_ADAPTERS)


def adapter_class(kind: str) -> type[EngineAdapter]:
    import importlib

    module, name = _ADAPTERS[kind]
    return getattr(importlib.import_module(module), name)


def make_adapter(sc: SweepConfig, acceptance: AcceptancePlan | None = None,
                 hints: EngineHints | None = None, where: Locate | None = None
                 ) -> EngineAdapter:
    """A complete adapter: validated, then built with everything it will ever need."""
    return adapter_class(sc.engine.kind)(sc, acceptance, hints, where)
