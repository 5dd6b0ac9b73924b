"""engine.kind -> adapter class. Adding an engine: one module here and one YAML; every other
list of engine kinds reads `ENGINE_KINDS`; config validation reads the same names from
harness/config/kinds.py (checked here at import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.config import kinds

if TYPE_CHECKING:  # the registry stays importable from config validation without cycles
    from harness.config.schema import SweepConfig
    from harness.engines.base import EngineAdapter, Locate
    from harness.engines.hints import EngineHints
    from harness.speculation.acceptance import AcceptancePlan

_ADAPTERS = {
    "llamacpp": ("harness.engines.llamacpp", "LlamaCppAdapter"),
    "vllm": ("harness.engines.vllm", "VllmAdapter"),
    "sglang": ("harness.engines.sglang", "SglangAdapter"),
    "trtllm": ("harness.engines.trtllm", "TrtllmAdapter"),
    "atom": ("harness.engines.atom", "AtomAdapter"),
    "endpoint": ("harness.engines.endpoint", "EndpointAdapter"),
    "multinode": ("harness.engines.multinode", "MultinodeAdapter"),
}
ENGINE_KINDS = tuple(_ADAPTERS)
if ENGINE_KINDS != kinds.ENGINE_KINDS:  # config validation reads harness.config.kinds
    raise ImportError(f"harness/engines/registry.py maps {ENGINE_KINDS}, "
                      f"harness/config/kinds.py names {kinds.ENGINE_KINDS}")


def adapter_class(kind: str) -> type[EngineAdapter]:
    import importlib

    module, name = _ADAPTERS[kind]
    return getattr(importlib.import_module(module), name)


def make_adapter(sc: SweepConfig, acceptance: AcceptancePlan | None = None,
                 hints: EngineHints | None = None, where: Locate | None = None
                 ) -> EngineAdapter:
    """A complete adapter: validated, then built with everything it will ever need."""
    return adapter_class(sc.engine.kind)(sc, acceptance, hints, where)
