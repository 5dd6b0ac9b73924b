"""Scenario-shape checks (called from harness.config.validate's check_combinations): a
fixed-sequence shape the model can serve, a trace corpus named as a replay can read it, and
routing headers a replay can send."""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.config.errors import ConfigError
from harness.config.kinds import CORRELATION_HEADERS
from harness.config.locations import CONTEXT_MARGIN
from harness.config.schema import SweepConfig

Locator = Callable[[str], str]


_DATASET_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def check_dataset(sc: SweepConfig, where: Locator) -> None:
    """A corpus by name (docs/corpus.md): a Hub id looks like owner/name, a split is named, and
    only replay scenarios read traces."""
    ds = sc.scenario.dataset
    if not (ds.id or ds.local_dir):
        return
    if sc.scenario.kind == "fixed":
        key = "scenario.dataset.id" if ds.id else "scenario.dataset.local_dir"
        raise ConfigError(where(key), key,
                          "a fixed-sequence scenario replays no traces",
                          "drop scenario.dataset, or use kind: agentic")
    if ds.id and not _DATASET_ID.match(ds.id):
        raise ConfigError(where("scenario.dataset.id"), "scenario.dataset.id",
                          f"{ds.id!r} is not a Hub dataset id (owner/name)",
                          "e.g. scenario.dataset.id=semianalysisai/cc-traces-weka-062126-256k, "
                          "or scenario.dataset.local_dir=PATH for a local copy")
    if not ds.split:
        raise ConfigError(where("scenario.dataset.split"), "scenario.dataset.split",
                          "empty split name", "use scenario.dataset.split=train (the corpus's)")


def check_fixed(sc: SweepConfig, where: Locator) -> None:
    """A fixed-sequence shape the model can serve."""
    sc_, model = sc.scenario, sc.model
    for key, value, options in (("scenario.prompts", sc_.prompts, ("inferencex", "filtered")),
                                ("scenario.warmup_prompts", sc_.warmup_prompts,
                                 ("first", "distinct"))):
        if value not in options:
            raise ConfigError(where(key), key, f"unknown choice {value!r}",
                              f"use one of {', '.join(options)} (docs/settings.md)")
    if model.chat_encoder not in ("template", "dsv4"):
        raise ConfigError(where("model.chat_encoder"), "model.chat_encoder",
                          f"unknown chat encoder {model.chat_encoder!r}",
                          "use template (the tokenizer's chat template) or dsv4 (DeepSeek-V4's "
                          "own encoder, InferenceX's --dsv4)")
    if model.chat_encoder == "dsv4" and sc_.prompts == "filtered":
        raise ConfigError(where("scenario.prompts"), "scenario.prompts",
                          f"{model.name} renders chat turns with DeepSeek-V4's encoder, which "
                          "only InferenceX's random prompts apply",
                          "use scenario.prompts=inferencex (the default)")
    if sc_.isl < 1 or sc_.osl < 1:
        raise ConfigError(where("scenario.isl"), "scenario.isl",
                          "fixed-sequence scenarios need isl and osl >= 1",
                          "set scenario.isl and scenario.osl")
    need = sc_.isl + sc_.osl + CONTEXT_MARGIN
    if need > model.context_length:
        raise ConfigError(
            where("scenario.isl"), "scenario.isl",
            f"ISL {sc_.isl} + OSL {sc_.osl} + {CONTEXT_MARGIN} margin = {need} tokens "
            f"exceeds {model.name}'s context of {model.context_length}",
            "pick a shorter scenario (e.g. scenarios=fixed-1k128 for small models) or a "
            "model with a longer context",
        )
    if not 0 < sc_.range_ratio <= 1:
        raise ConfigError(where("scenario.range_ratio"), "scenario.range_ratio",
                          "range_ratio must be in (0, 1]", "InferenceX uses 0.8")




def check_header_names(headers: list[str], key: str, where: Locator) -> None:
    """Only the routing headers AIPerf derives from the correlation id (docs/replay.md)."""
    for h in headers:
        if h not in CORRELATION_HEADERS:
            raise ConfigError(where(key), key,
                              f"{h!r} is not a header AIPerf fills with the correlation id",
                              f"use any of {', '.join(CORRELATION_HEADERS)} (exact spelling), "
                              "e.g. scenario.correlation_headers=[X-SMG-Routing-Key]")


def check_correlation_headers(sc: SweepConfig, where: Locator) -> None:
    """Routing headers only where requests carry a correlation id: an agentic replay in
    AIPerf's request style."""
    key, scen = "scenario.correlation_headers", sc.scenario
    check_header_names(scen.correlation_headers, key, where)
    if scen.correlation_headers and scen.kind != "agentic":
        raise ConfigError(where(key), key, f"a {scen.kind} scenario sends no correlation ids",
                          "drop scenario.correlation_headers, or use kind: agentic")
    if scen.correlation_headers and scen.request_style != "aiperf":
        raise ConfigError(where(key), key,
                          f"request_style={scen.request_style} sends no session headers",
                          "use scenario.request_style=aiperf, or drop "
                          "scenario.correlation_headers")
