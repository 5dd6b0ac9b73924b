"""Which declaration of what an engine's /metrics exposes applies: each adapter class declares
its own (`EngineAdapter.metrics`, names, labels and semantics from the engine's source;
docs/engine-metrics.md cites the files and commits). Here: the declaration of a kind read from
the registry (`counters_of`, and `ENGINE_COUNTERS`, a read-only view by kind), the union an
attached endpoint of unknown family is matched against, and which declaration a scrape
matches (`resolve`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from harness.engines.counter_types import EngineCounters
from harness.engines.prometheus import Sample
from harness.engines.registry import adapter_class, engine_kinds
from harness.engines.series import Series


def declaring_kinds() -> tuple[str, ...]:
    """The engine kinds whose adapters declare their own metrics."""
    return tuple(k for k in engine_kinds() if adapter_class(k).metrics is not None)


def union_counters() -> EngineCounters:
    """An attached server of unknown family: every declaring engine's names, tried in the
    registry's order on each scrape."""
    return EngineCounters(kind="endpoint", source="union of the engines the registry maps",
                          candidates=declaring_kinds())


def counters_of(kind: str) -> EngineCounters:
    """A kind's declaration; the union for a kind that declares none (it attaches to, or
    deploys, another engine: endpoint, multinode)."""
    declared = adapter_class(kind).metrics
    return declared if declared is not None else union_counters()


class _ByKind(Mapping[str, EngineCounters]):
    """ENGINE_COUNTERS: the adapters' declarations by kind, read from the registry (no table
    of its own)."""

    def __getitem__(self, kind: str) -> EngineCounters:
        if kind not in engine_kinds():
            raise KeyError(kind)
        return counters_of(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(engine_kinds())

    def __len__(self) -> int:
        return len(engine_kinds())


ENGINE_COUNTERS: Mapping[str, EngineCounters] = _ByKind()


def resolve(c: EngineCounters, sample: Sample) -> EngineCounters | None:
    """The declaration to use: `c` itself, or for an attached endpoint the first known engine
    whose token counters, drafts counter or AL gauge appear in `sample`."""
    if not c.candidates:
        return c
    for kind in c.candidates:
        k = counters_of(kind)
        names = [s.name for s in (k.tokens.generation if k.tokens else None,
                                  k.spec.drafts if k.spec else None) if s is not None]
        names += [k.al_gauge.name] if k.al_gauge else []
        if any(Series(n).by_labels(sample) for n in names):
            return k
    return None
