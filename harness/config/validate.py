"""Turn a composed Hydra config into a typed `SweepConfig`, or a `ConfigError` that says
which file, which key, and what to do. Runs before any server starts."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from harness.config.errors import ConfigError, did_you_mean
from harness.config.schema import GROUP_OF_NODE, SCHEMA_OF_NODE, SweepConfig

PRIMARY_CONFIG = "recipes/sweep.yaml"
SCENARIO_KINDS = ("fixed", "agentic")
ENGINE_KINDS = ("llamacpp", "vllm", "sglang", "trtllm", "atom", "endpoint")
CONTEXT_MARGIN = 256  # tokens beyond ISL+OSL a server is sized for (chat template, BOS)


class Locator:
    """Knows which file, or which command-line override, a config key came from."""

    def __init__(self, choices: dict[str, str], overrides: Sequence[str]) -> None:
        self.choices = choices
        self.overrides = list(overrides)

    def __call__(self, key: str) -> str:
        groups = set(GROUP_OF_NODE.values())
        for ov in self.overrides:
            name = ov.lstrip("+~").split("=", 1)[0]
            ov = ov.lstrip("+") if ov.startswith("++") else ov
            if name in groups:
                continue  # `model=x` chooses a file; the values still come from that file
            if name == key or key.startswith(name + "."):
                return f"the command-line override '{ov}'"
        node = key.split(".", 1)[0]
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


def to_sweep_config(cfg: DictConfig, where: Locator) -> SweepConfig:
    """Check every key against the schemas, then every cross-field rule."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(SweepConfig), cfg)
    except ConfigKeyError as e:
        full = str(e.full_key or e.key)
        parent, _, bad = full.rpartition(".")
        schema = _schema_at(parent)
        names = _field_names(schema) if schema else []
        hint = did_you_mean(bad, names)
        node = parent or "the sweep"
        raise ConfigError(
            where(full), full, f"'{bad}' is not a setting of {node}",
            f"remove or rename it{'; ' + hint if hint else ''}"
            + (f" (valid keys: {', '.join(names)})" if names else ""),
        ) from None
    except ValidationError as e:
        full = str(e.full_key)
        raise ConfigError(where(full), full, e.msg.split("\n")[0], _type_fix(full)) from None
    missing = sorted(OmegaConf.missing_keys(merged))
    if missing:
        key = missing[0]
        group = GROUP_OF_NODE.get(key)
        fix = (f"choose one with {group}=<name> or add it to the defaults list of "
               f"{PRIMARY_CONFIG}" if group else f"set {key} in {where(key)}")
        raise ConfigError(where(key), key, "required value is missing", fix)
    sc = OmegaConf.to_object(merged)
    assert isinstance(sc, SweepConfig)
    check_combinations(sc, where)
    return sc


def _type_fix(full_key: str) -> str:
    parent, _, name = full_key.rpartition(".")
    schema = _schema_at(parent)
    for f in dataclasses.fields(schema) if schema else ():
        if f.name == name:
            return f"give {full_key} a value of type {f.type}"
    return "give it a value of the type the schema expects"


def gpus_of(sc: SweepConfig) -> int:
    """GPU count of a single-node point: tp x pp (methodology §1; ep and dp reuse them)."""
    return sc.topology.tp * sc.topology.pp


def check_combinations(sc: SweepConfig, where: Locator) -> None:
    """Rules that involve more than one file. Each names the key to change and how."""
    sc_, eng, spec, model = sc.scenario, sc.engine, sc.speculator, sc.model
    if sc_.kind not in SCENARIO_KINDS:
        raise ConfigError(where("scenario.kind"), "scenario.kind", f"unknown kind {sc_.kind!r}",
                          f"use one of {SCENARIO_KINDS}")
    if eng.kind not in ENGINE_KINDS:
        raise ConfigError(where("engine.kind"), "engine.kind", f"unknown engine {eng.kind!r}",
                          f"use one of {ENGINE_KINDS}")
    if not sc.concurrency or any(c < 1 for c in sc.concurrency):
        raise ConfigError(where("concurrency"), "concurrency",
                          f"concurrency must be a non-empty list of positive integers, "
                          f"got {sc.concurrency}", "e.g. concurrency=[1,2,4,8]")
    if sc.repeats < 1:
        raise ConfigError(where("repeats"), "repeats", "repeats must be >= 1", "set repeats=1")
    precision = sc.precision or model.default_precision
    if model.precisions and precision not in model.precisions:
        raise ConfigError(where("precision"), "precision",
                          f"{model.name} has no {precision!r} weights in its recipe",
                          f"use one of {model.precisions} or add it to "
                          f"recipes/model/{model.name}.yaml")
    if sc_.kind == "fixed":
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
    if sc_.api not in ("completions", "chat"):
        raise ConfigError(where("scenario.api"), "scenario.api", f"unknown api {sc_.api!r}",
                          "use completions or chat")
    if spec.method != "none" and eng.speculators and spec.method not in eng.speculators:
        raise ConfigError(
            where("speculator.method"), "speculator.method",
            f"engine {eng.kind} cannot run speculator {spec.method!r}",
            f"pick one of {eng.speculators} for this engine, or another engine",
        )
    if spec.method != "none" and spec.k < 1:
        raise ConfigError(where("speculator.k"), "speculator.k",
                          f"speculator {spec.method} needs a draft length k >= 1",
                          "set speculator.k (e.g. speculator.k=3)")
    if spec.acceptance.mode not in ("auto", "real", "injected"):
        raise ConfigError(where("speculator.acceptance.mode"), "speculator.acceptance.mode",
                          f"unknown mode {spec.acceptance.mode!r}", "use auto, real or injected")
    topo = sc.topology
    if min(topo.tp, topo.ep, topo.pp) < 1:
        raise ConfigError(where("topology"), "topology", "tp, ep and pp must be >= 1",
                          "e.g. topology.tp=8")
    if eng.kind == "llamacpp" and (gpus_of(sc) > 1 or topo.ep > 1):
        raise ConfigError(where("topology.tp"), "topology.tp",
                          "the embedded llama.cpp engine serves on one device",
                          "set topology.tp=1 topology.pp=1 topology.ep=1")
    if eng.kind != "endpoint" and gpus_of(sc) > sc.chip.gpus_per_node:
        raise ConfigError(where("topology.tp"), "topology.tp",
                          f"tp x pp = {gpus_of(sc)} GPUs exceeds {sc.chip.name}'s "
                          f"{sc.chip.gpus_per_node} per node",
                          "lower tp/pp, or use a multi-node recipe")
    if eng.kind == "endpoint" and not eng.url:
        raise ConfigError(where("engine.url"), "engine.url",
                          "engine=endpoint needs the URL of a running server",
                          "add engine.url=http://host:port")


def repo_root() -> Path:
    """The checkout that holds recipes/ and scenarios/ (this package lives inside it)."""
    return Path(__file__).resolve().parents[2]
