"""Turn a composed Hydra config into a typed `SweepConfig`, or a `ConfigError` that says
which file, which key, and what to do. Runs before any server starts."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from harness.config.errors import ConfigError, Where, did_you_mean
from harness.config.fields import choices_of, walk_values
from harness.config.run_id import check_run_location
from harness.config.schema import GROUP_OF_NODE, SCHEMA_OF_NODE, SpeculatorConfig, SweepConfig
from harness.config.validate_scenario import (
    check_correlation_headers,
    check_dataset,
)
from harness.config.validate_slo import check_slo_settings
from harness.config.validate_speculator import check_speculator
from harness.config.validate_stages import check_correctness
from harness.config.validate_topology import check_topology

PRIMARY_CONFIG = "recipes/sweep.yaml"
# Bounds that keep a typo from building prompts for minutes before anything is measured:
# InferenceX's largest load level is 1024; 4096 leaves room for big multi-node recipes.
MAX_CONCURRENCY = 4096
# speculator.sample_method's choices, declared on the field: how drafts are sampled and
# verified (acceptance curves are keyed on it, harness/speculation/acceptance.py).
SAMPLE_METHODS = choices_of(SpeculatorConfig, "sample_method")


class Locator:
    """The `Where` of a composed sweep (harness.config.errors): which file, or which
    command-line override, a config key came from."""

    def __init__(self, choices: dict[str, str], overrides: Sequence[str]) -> None:
        self.choices = choices
        self.overrides = list(overrides)

    def __call__(self, key: str) -> str:
        groups = set(GROUP_OF_NODE.values())
        # the last override of a key is the one that took effect (Hydra applies them in order)
        for ov in reversed(self.overrides):
            name = ov.lstrip("+~").split("=", 1)[0]
            ov = ov.lstrip("+") if ov.startswith("++") else ov
            if name in groups:
                continue  # `model=x` chooses a file; the values still come from that file
            base = re.sub(r"\[.*", "", key)  # concurrency[0] came from `concurrency=...`
            if name in (key, base) or key.startswith(name + "."):
                return f"the command-line override '{ov}'"
        node = re.sub(r"\[.*", "", key.split(".", 1)[0])  # search_space[3].x: search_space
        group = GROUP_OF_NODE.get(node)
        if group and group in self.choices:
            base = "scenarios" if group == "scenarios" else f"recipes/{group}"
            return f"{base}/{self.choices[group]}.yaml"
        return PRIMARY_CONFIG


def _field_names(schema: type) -> list[str]:
    return [f.name for f in dataclasses.fields(schema)]


def _schema_at(path: str) -> type | None:
    """The dataclass that describes the node at a dotted path ('' = the sweep itself)."""
    schema: Any = SweepConfig
    for part in [p for p in path.split(".") if p]:
        hints = {f.name: f for f in dataclasses.fields(schema)}
        if part not in hints:
            return None
        nxt = SCHEMA_OF_NODE.get(part) if schema is SweepConfig else None
        if nxt is None:
            default = hints[part].default_factory  # type: ignore[misc]
            nxt = type(default()) if callable(default) else None
        if nxt is None or not dataclasses.is_dataclass(nxt):
            return None
        schema = nxt
    return schema


def to_sweep_config(cfg: DictConfig, where: Where) -> SweepConfig:
    """Check every key against the schemas, then every cross-field rule that holds for any
    engine and scenario kind. The kinds' own rules come after, from their plug-ins
    (harness.workloads.registry.check_kinds): this layer does not know which kinds exist."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(SweepConfig), cfg)
    except ConfigKeyError as e:
        full = str(e.full_key or e.key)
        parent, _, bad = full.rpartition(".")
        schema = _schema_at(parent)
        names = _field_names(schema) if schema else []
        hint = did_you_mean(bad, names)
        node = parent or "the sweep"
        raise ConfigError.at(where, full, f"'{bad}' is not a setting of {node}",
            f"remove or rename it{'; ' + hint if hint else ''}"
            + (f" (valid keys: {', '.join(names)})" if names else ""),
        ) from None
    except ValidationError as e:
        full = str(e.full_key)
        if "is not a ListConfig" in e.msg:  # `concurrency=0`: OmegaConf names its node types
            raise ConfigError.at(where, full, "a list is expected, got a single value",
                                 f"write it in brackets: {full}=[1,2,4] ({_type_fix(full)})"
                                 ) from None
        raise ConfigError.at(where, full, e.msg.split("\n")[0], _type_fix(full)) from None
    missing = sorted(OmegaConf.missing_keys(merged))
    if missing:
        key = missing[0]
        group = GROUP_OF_NODE.get(key)
        fix = (f"choose one with {group}=<name> or add it to the defaults list of "
               f"{PRIMARY_CONFIG}" if group else f"set {key} in {where(key)}")
        raise ConfigError.at(where, key, "required value is missing", fix)
    sc = OmegaConf.to_object(merged)
    assert isinstance(sc, SweepConfig)
    check_run_location(sc.results_dir, sc.run_id, where)
    check_ranges(sc, where)
    if sc.search_space:  # a catalog recipe: every row is checked as a recipe of its own
        from harness.config.launches import launches
        from harness.config.validate_catalog import check_rows

        check_rows(sc, where)

        launches(sc, check=lambda one: check_combinations(one, where))
    elif sc.row_concurrency:
        raise ConfigError.at(where, "row_concurrency",
                             "this recipe has no search-space rows to pick concurrencies from",
                             "set the load levels with concurrency=[...] instead")
    else:
        check_combinations(sc, where)
    return sc


def _type_fix(full_key: str) -> str:
    full_key = re.sub(r"\[.*", "", full_key)  # concurrency[0] -> concurrency
    parent, _, name = full_key.rpartition(".")
    schema = _schema_at(parent)
    for f in dataclasses.fields(schema) if schema else ():
        if f.name == name:
            return f"give {full_key} a value of type {f.type}"
    return "give it a value of the type the schema expects"


def gpus_of(sc: SweepConfig) -> int:
    """GPUs of a point (docs/methodology.md §1): prefill + decode pools when disaggregated,
    else tp x pp x pcp (ep and attention data parallelism reuse the same GPUs)."""
    t = sc.topology
    if t.prefill_gpus > 0 and t.decode_gpus > 0:
        return t.prefill_gpus + t.decode_gpus
    if t.prefill_gpus > 0:  # a pool of workers only (InferenceX rows with decode num-worker 0)
        return t.prefill_gpus
    return t.tp * t.pp * t.pcp


def check_ranges(sc: SweepConfig, where: Where) -> None:
    """Every setting declared with a bound or choices (harness.config.fields) within them:
    NaN and infinity are never in range, except infinity where the field means no cap."""
    for key, value, s in walk_values(sc):
        if value is None:
            continue
        if s.choices and value not in s.choices:
            noun = s.noun or key.rsplit(".", 1)[-1].replace("_", " ")
            raise ConfigError.at(where, key, f"unknown {noun} {value!r}",
                                 s.fix or f"use one of {s.choices}")
        if s.bounded:
            problem = s.range_problem(float(value))
            if problem:
                raise ConfigError.at(where, key, problem, s.fix)
    check_concurrency(sc, where)


def check_concurrency(sc: SweepConfig, where: Where) -> None:
    """A non-empty list of distinct load levels in [1, MAX_CONCURRENCY]; a duplicate would give
    two points one id (the second overwriting the first's requests)."""
    conc, key = sc.concurrency, "concurrency"
    if not conc or any(c < 1 or c > MAX_CONCURRENCY for c in conc):
        raise ConfigError.at(where, key,
                             f"concurrency must be a non-empty list of integers in "
                             f"[1, {MAX_CONCURRENCY}], got {conc}", "e.g. concurrency=[1,2,4,8]")
    dups = sorted({c for c in conc if conc.count(c) > 1})
    if dups:
        raise ConfigError.at(where, key, f"concurrency {dups} listed more than once",
                             "list each load level once; use repeats=N to measure one again")


def check_combinations(sc: SweepConfig, where: Where) -> None:
    """Rules that involve more than one file. Each names the key to change and how."""
    model = sc.model
    precision = sc.precision or model.default_precision
    if model.precisions and precision not in model.precisions:
        raise ConfigError.at(where, "precision",
                             f"{model.name} has no {precision!r} weights in its recipe",
                             f"use one of {model.precisions} or add it to "
                             f"recipes/model/{model.name}.yaml")
    check_slo_settings(sc, where)
    check_dataset(sc, where)
    check_correlation_headers(sc, where)
    check_speculator(sc, where)
    check_correctness(sc, where)
    check_topology(sc, where)
    from harness.config.validate_catalog import check_catalog

    check_catalog(sc, where)
