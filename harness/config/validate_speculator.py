"""Rules across the speculator section's fields and its engine's recipe (docs/methodology.md
§5), run for every launch by harness.config.validate.check_combinations."""

from __future__ import annotations

from harness.config.errors import ConfigError, Where
from harness.config.schema import SweepConfig


def check_speculator(sc: SweepConfig, where: Where) -> None:
    """The speculator against its engine's recipe: a method it runs, a draft length, n-gram
    lengths in order. Whether the engine can render its sample method is its adapter's rule
    (harness.workloads.registry.check_sample_method); choices and bounds are the fields' own."""
    eng, spec = sc.engine, sc.speculator
    if spec.method != "none" and eng.speculators and spec.method not in eng.speculators:
        raise ConfigError.at(where, "speculator.method",
            f"engine {eng.kind} cannot run speculator {spec.method!r}",
            f"pick one of {eng.speculators} for this engine, or another engine",
        )
    if spec.method != "none" and spec.k < 1:
        raise ConfigError.at(where, "speculator.k",
                             f"speculator {spec.method} needs a draft length k >= 1",
                             "set speculator.k (e.g. speculator.k=3)")
    if sc.speculator.ngram_max < sc.speculator.ngram_min:
        raise ConfigError.at(where, "speculator.ngram_max",
                             "ngram_max is below ngram_min", "set ngram_max >= ngram_min")
