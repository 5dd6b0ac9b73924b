"""engine.kind -> adapter class. Adding an engine: one module here and one YAML."""

from __future__ import annotations

from harness.config.schema import SweepConfig
from harness.engines.base import EngineAdapter

_ADAPTERS = {
    "llamacpp": ("harness.engines.llamacpp", "LlamaCppAdapter"),
    "vllm": ("harness.engines.vllm", "VllmAdapter"),
    "sglang": ("harness.engines.sglang", "SglangAdapter"),
    "trtllm": ("harness.engines.trtllm", "TrtllmAdapter"),
    "atom": ("harness.engines.atom", "AtomAdapter"),
    "endpoint": ("harness.engines.endpoint", "EndpointAdapter"),
}


def adapter_class(kind: str) -> type[EngineAdapter]:
    import importlib

    module, name = _ADAPTERS[kind]
    return getattr(importlib.import_module(module), name)


def make_adapter(sc: SweepConfig) -> EngineAdapter:
    return adapter_class(sc.engine.kind)(sc)
