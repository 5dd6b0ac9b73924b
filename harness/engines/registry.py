"""engine.kind -> adapter class. Adding an engine: one module here and one YAML."""

from __future__ import annotations

from harness.config.schema import SweepConfig
from harness.engines.base import EngineAdapter


def adapter_class(kind: str) -> type[EngineAdapter]:
    if kind == "llamacpp":
        from harness.engines.llamacpp import LlamaCppAdapter

        return LlamaCppAdapter
    if kind == "endpoint":
        from harness.engines.endpoint import EndpointAdapter

        return EndpointAdapter
    raise KeyError(kind)


def make_adapter(sc: SweepConfig) -> EngineAdapter:
    return adapter_class(sc.engine.kind)(sc)
