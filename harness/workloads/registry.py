"""scenario.kind -> workload class: the only list of workload kinds, and the check step that
asks each kind's plug-ins what they accept.

Config validation (harness.config.validate) sits below engines and workloads, so it checks a
sweep's structure and the rules every kind shares; `check_kinds` then asks the engine's
adapter class and the workload's class for theirs. Every command that validates a config goes
through it (the sweep's precheck and prepare, `harness sweep --dry-run`). A workload kept
outside this package registers itself (`register`) from a module named in HARNESS_PLUGINS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config.errors import ConfigError
from harness.config.kind_registry import KindRegistry
from harness.config.launches import launches
from harness.config.schema import SweepConfig
from harness.engines.registry import check_engine

if TYPE_CHECKING:
    from harness.workloads.base import Workload

Locate = Callable[[str], str]
_WORKLOADS: dict[str, tuple[str, str]] = {
    "fixed": ("harness.workloads.fixed_seq", "FixedSequenceWorkload"),
    "agentic": ("harness.workloads.agentic_lanes", "AgenticLaneWorkload"),
    "timestamped": ("harness.workloads.timestamped", "TimestampedReplayWorkload"),
}
WORKLOAD_KINDS = tuple(_WORKLOADS)  # the built-in kinds; workload_kinds() adds plug-ins
_REGISTRY = KindRegistry("workload", "scenario.kind", _WORKLOADS, unknown="kind")
register = _REGISTRY.register  # a class decorator, for a workload kept outside this package
workload_kinds = _REGISTRY.kinds


def workload_class(kind: str) -> type[Workload]:
    """The class of a workload kind; an unknown kind is a ConfigError (`check_kinds` names the
    file it came from first)."""
    return _REGISTRY.cls(kind)


def make_workload(sc: SweepConfig, tokenizer: Any, root: Path,
                  where: Locate | None = None) -> Workload:
    """Built (traces loaded and checked included) before any engine starts; the kinds' rules
    are asked first, so no path builds a workload its kind refuses."""
    check_launch(sc, where or (lambda key: "the config"))
    return workload_class(sc.scenario.kind)(sc, tokenizer, root)


def check_kinds(sc: SweepConfig, where: Locate) -> None:
    """Every rule of the sweep's engine and workload kinds; for a catalog recipe, of each
    launch it makes. Run after harness.config.validate.to_sweep_config."""
    if sc.search_space:
        launches(sc, check=lambda one: check_launch(one, where))
    else:
        check_launch(sc, where)


def check_launch(sc: SweepConfig, where: Locate) -> None:
    kinds = workload_kinds()
    if sc.scenario.kind not in kinds:
        raise ConfigError.at(where, "scenario.kind",
                             f"unknown kind {sc.scenario.kind!r}", f"use one of {kinds}")
    engine = check_engine(sc, where)
    workload = workload_class(sc.scenario.kind)
    check_scenario_flags(workload, sc, where)
    workload.check(sc, where)
    check_sample_method(sc, where, engine.samples_drafts, workload.synthetic_text)


def _refuse(where: Locate, key: str, problem: str, fix: str) -> None:
    raise ConfigError.at(where, key, problem, fix)


def check_scenario_flags(workload: type[Workload], sc: SweepConfig, where: Locate) -> None:
    """What the scenario asks of its kind against what the kind's class says it offers."""
    scen, kind = sc.scenario, workload.kind
    if scen.arrival != "closed" and not workload.open_loop_arrivals:
        _refuse(where, "scenario.arrival",
                f"open-loop arrivals are for fixed-sequence scenarios, not {kind}",
                "set scenario.arrival=closed (timestamped replay already sends at recorded "
                "times)")
    if sc.search.mode == "slo" and not workload.searchable:
        _refuse(where, "search.mode", "search=slo runs fixed-sequence scenarios",
                "use a fixed-* scenario")
    ds = scen.dataset
    if (ds.id or ds.local_dir) and not workload.reads_traces:
        _refuse(where, "scenario.dataset.id" if ds.id else "scenario.dataset.local_dir",
                f"{workload.describes} replay no traces",
                "drop scenario.dataset, or use kind: agentic")
    if scen.correlation_headers and not workload.sends_correlation_ids:
        _refuse(where, "scenario.correlation_headers",
                f"a {kind} scenario sends no correlation ids",
                "drop scenario.correlation_headers, or use kind: agentic")
    if sc.engine.profile and not workload.profilable:
        _refuse(where, "engine.profile",
                f"the profiler window is wired for fixed-sequence points, not {kind}",
                "set engine.profile=false, or profile a fixed-* scenario")


def check_sample_method(sc: SweepConfig, where: Locate, engine_samples: bool,
                        synthetic_text: bool) -> None:
    """A sample method the engine can render, or an injected point, which only borrows the
    curve: the forced acceptance replaces the verification, as InferenceX's ATOM Kimi-K3
    script injects the probabilistic curve."""
    spec, key = sc.speculator, "speculator.sample_method"
    injected = spec.acceptance.mode == "injected" or (
        spec.acceptance.mode == "auto" and synthetic_text)
    if (spec.method != "none" and spec.sample_method != "greedy" and not injected
            and not engine_samples):
        _refuse(where, key,
                f"engine {sc.engine.kind} drafts greedily; it has no knob for "
                f"{spec.sample_method} drafts, so real acceptance would not be what the "
                "setting says",
                "use engine=vllm, speculator.sample_method=greedy, or an injected point "
                "(speculator.acceptance.mode=injected)")
