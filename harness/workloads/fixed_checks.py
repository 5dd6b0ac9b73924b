"""What a fixed-sequence scenario must satisfy before its prompts are built: a shape the model
can serve, prompt choices that exist, and a request count a job can build in reasonable time.
Asked by the check step through `FixedSequenceWorkload.check`."""

from __future__ import annotations

from collections.abc import Callable

from harness.config.errors import ConfigError
from harness.config.locations import CONTEXT_MARGIN
from harness.config.schema import SweepConfig

Locate = Callable[[str], str]
# fixed-sequence prompts one job builds (warmup included): a typo must not build prompts for
# minutes before anything is measured
MAX_REQUESTS_PER_JOB = 250_000


def check_request_count(sc: SweepConfig, where: Locate) -> None:
    per = sc.scenario.requests_per_conc + sc.scenario.warmup_per_conc
    conc, key = sc.concurrency, "concurrency"
    total = per * sum(conc) * sc.repeats
    if total > MAX_REQUESTS_PER_JOB:
        raise ConfigError.at(where, key,
                             f"{total:,} fixed-sequence requests would be built ({per} per "
                             f"unit of concurrency x {sum(conc)} x {sc.repeats} repeats), "
                             f"over the limit of {MAX_REQUESTS_PER_JOB:,}",
                             "lower concurrency, scenario.requests_per_conc or repeats, or "
                             "split the sweep into several runs")


def check_choices(sc: SweepConfig, where: Locate) -> None:
    """Prompt sets that exist, in a combination the model's chat encoder applies."""
    sc_, model = sc.scenario, sc.model
    for key, value, options in (("scenario.prompts", sc_.prompts, ("inferencex", "filtered")),
                                ("scenario.warmup_prompts", sc_.warmup_prompts,
                                 ("first", "distinct"))):
        if value not in options:
            raise ConfigError.at(where, key, f"unknown choice {value!r}",
                                 f"use one of {', '.join(options)} (docs/settings.md)")
    if model.chat_encoder == "dsv4" and sc_.prompts == "filtered":
        raise ConfigError.at(where, "scenario.prompts",
                             f"{model.name} renders chat turns with DeepSeek-V4's encoder, which "
                             "only InferenceX's random prompts apply",
                             "use scenario.prompts=inferencex (the default)")


def check_shape(sc: SweepConfig, where: Locate) -> None:
    """A shape the model can serve."""
    sc_, model = sc.scenario, sc.model
    if sc_.isl < 1 or sc_.osl < 1:
        raise ConfigError.at(where, "scenario.isl",
                             "fixed-sequence scenarios need isl and osl >= 1",
                             "set scenario.isl and scenario.osl")
    need = sc_.isl + sc_.osl + CONTEXT_MARGIN
    if need > model.context_length:
        raise ConfigError.at(where, "scenario.isl",
            f"ISL {sc_.isl} + OSL {sc_.osl} + {CONTEXT_MARGIN} margin = {need} tokens "
            f"exceeds {model.name}'s context of {model.context_length}",
            "pick a shorter scenario (e.g. scenarios=fixed-1k128 for small models) or a "
            "model with a longer context",
        )
    if not 0 < sc_.range_ratio <= 1:
        raise ConfigError.at(where, "scenario.range_ratio",
                             "range_ratio must be in (0, 1]", "InferenceX uses 0.8")


def check_fixed(sc: SweepConfig, where: Locate) -> None:
    check_request_count(sc, where)
    check_choices(sc, where)
    check_shape(sc, where)
