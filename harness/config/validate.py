"""Turn a composed Hydra config into a typed `SweepConfig`, or a `ConfigError` that says
which file, which key, and what to do. Runs before any server starts."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from harness.config.errors import ConfigError, did_you_mean
from harness.config.run_id import check_run_location
from harness.config.schema import GROUP_OF_NODE, SCHEMA_OF_NODE, SweepConfig
from harness.config.validate_bench import check_client_choices
from harness.config.validate_scenario import (
    check_chat_encoder,
    check_correlation_headers,
    check_dataset,
)
from harness.config.validate_slo import check_slo_settings

PRIMARY_CONFIG = "recipes/sweep.yaml"
# Bounds that keep a typo from building prompts for minutes before anything is measured:
# InferenceX's largest load level is 1024; 4096 leaves room for big multi-node recipes.
MAX_CONCURRENCY = 4096
MAX_REPEATS = 100
# speculator.sample_method's choices: how drafts are sampled and verified (acceptance curves
# are keyed on it, harness/speculation/acceptance.py): greedy (vLLM's default
# draft_sample_method; what SGLang, TensorRT-LLM and ATOM drafters run), probabilistic (vLLM
# draft_sample_method probabilistic), probabilistic-block (and rejection_sample_method block).
SAMPLE_METHODS = ("greedy", "probabilistic", "probabilistic-block")


class Locator:
    """Knows which file, or which command-line override, a config key came from."""

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


def to_sweep_config(cfg: DictConfig, where: Locator) -> SweepConfig:
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


def _dotted(sc: SweepConfig, key: str) -> Any:
    obj: Any = sc
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


# key -> (lowest, highest, lowest excluded?, example fix). None: no bound on that side.
_RANGES: dict[str, tuple[float | None, float | None, bool, str]] = {
    "repeats": (1, MAX_REPEATS, False, "e.g. repeats=3 (the gate's t-test needs 2 or more)"),
    "seed": (0, 2**63 - 1, False, "give a non-negative integer, or seed=null to draw one"),
    "client.timeout_s": (0, None, True, "e.g. client.timeout_s=3600"),
    "client.stall_timeout_s": (0, None, True, "e.g. client.stall_timeout_s=600"),
    "client.max_stamp_err_ms": (0, None, True, "e.g. client.max_stamp_err_ms=1.0"),
    "client.max_cpu_share": (0, 1, True, "a share in (0, 1], e.g. 0.95"),
    "client.workers": (1, 256, False, "e.g. client.workers=2 (one client process per core)"),
    "client.max_queue_delay_ms": (0, None, True, "e.g. client.max_queue_delay_ms=10"),
    "client.max_stall_share": (0, 1, True, "a share in (0, 1], e.g. 0.01"),
    "engine.startup_timeout_s": (0, None, True, "e.g. engine.startup_timeout_s=900"),
    "engine.threads": (-1, None, False, "e.g. engine.threads=2, -1 for every core but the "
                       "client's, or null for all cores"),
    "engine.nice": (0, 19, False, "a niceness 0-19 that lowers the engine's priority (raising "
                    "it needs privileges), or null for the harness's own"),
    "speculator.k": (0, 64, False, "e.g. speculator.k=3"),
    "speculator.ngram_min": (1, None, False, "e.g. speculator.ngram_min=2"),
    "speculator.ngram_max": (1, None, False, "e.g. speculator.ngram_max=4"),
    "speculator.acceptance.length": (1, None, False, "an acceptance length is >= 1"),
    "speculator.acceptance.confidence": (0, 1, True, "e.g. 0.999 (two-sided)"),
    "speculator.acceptance.min_drafts": (1, None, False, "e.g. 200"),
    "topology.pcp": (1, None, False, "e.g. topology.pcp=1"),
    "topology.prefill_gpus": (0, None, False, "0 = aggregated serving"),
    "topology.decode_gpus": (0, None, False, "0 = aggregated serving"),
    "scenario.speedup": (0, None, True, "e.g. scenario.speedup=10 (timestamped replay)"),
    "client.max_event_bytes": (1024, None, False, "e.g. client.max_event_bytes=4194304"),
    "scenario.requests_per_conc": (1, 10_000, False, "e.g. scenario.requests_per_conc=10"),
    "scenario.warmup_per_conc": (0, 10_000, False, "e.g. scenario.warmup_per_conc=2"),
    "scenario.min_success": (0, 1, False, "a share in [0, 1], e.g. 0.95"),
    "scenario.duration_s": (0, None, True, "e.g. scenario.duration_s=900"),
    "scenario.min_measured_s": (0, None, False, "e.g. scenario.min_measured_s=900"),
    "scenario.max_overflow_share": (0, 1, False, "a share in [0, 1], e.g. 0.01"),
    "scenario.max_failed_share": (0, 1, False, "a share in [0, 1], e.g. 0.10"),
    "scenario.idle_cap_s": (0, None, False, "e.g. scenario.idle_cap_s=10, or inf for no cap"),
    "scenario.tree_cap_s": (0, None, False, "e.g. scenario.tree_cap_s=300, or inf for no cap"),
    "scenario.warmup_requests_per_lane": (0, 10_000, False,
                                          "e.g. scenario.warmup_requests_per_lane=10"),
    "scenario.start_min_ratio": (0, 1, False, "a share in [0, 1], e.g. 0.25"),
    "scenario.start_max_ratio": (0, 1, False, "a share in [0, 1], e.g. 0.75"),
    "scenario.fit_factor": (1, None, False, "1 keeps the trace; e.g. fit_factor=4 divides by 4"),
    "scenario.fit_cap_tokens": (0, None, False, "0 = no cap; e.g. fit_cap_tokens=8192"),
    "scenario.dataset.max_entries": (0, None, False, "0 = every trace; AgentX uses 393"),
    "scenario.dataset.max_context_tokens": (0, None, False, "0 = no limit; e.g. 262144"),
    "eval.limit": (1, None, False, "e.g. eval.limit=50, or null for the whole split"),
    "eval.num_fewshot": (0, 64, False, "e.g. eval.num_fewshot=5"),
    "eval.concurrency": (1, 4096, False, "e.g. eval.concurrency=64"),
    "eval.max_length": (256, None, False, "e.g. eval.max_length=16384"),
    "eval.max_gen_toks": (1, None, False, "e.g. eval.max_gen_toks=256"),
    "eval.timeout_s": (0, None, True, "e.g. eval.timeout_s=1800"),
    "lossless.prompts": (1, 50, False, "e.g. lossless.prompts=8 (the slice has 50)"),
    "lossless.max_tokens": (1, 4096, False, "e.g. lossless.max_tokens=48"),
    "lossless.samples": (2, 10_000, False, "e.g. lossless.samples=24"),
    "lossless.positions": (1, 4096, False, "e.g. lossless.positions=8"),
    "lossless.alpha": (0, 1, True, "a significance level in (0, 1), e.g. 0.01"),
    "lossless.tie_margin": (0, None, False, "nats, e.g. lossless.tie_margin=0.25 (0 = strict)"),
    "lossless.top_logprobs": (0, 20, False, "e.g. lossless.top_logprobs=5 (0: margins unknown)"),
    "model.context_length": (1, None, False, "the model's trained context, e.g. 8192"),
    "chip.gpus_per_node": (1, None, False, "e.g. chip.gpus_per_node=8"),
    "chip.power_kw_all_in": (0, None, False, "kW per GPU including its host share"),
    "chip.cost_per_gpu_hr.hyperscaler": (0, None, False, "$ per GPU-hour"),
    "chip.cost_per_gpu_hr.neocloud": (0, None, False, "$ per GPU-hour"),
    "chip.cost_per_gpu_hr.rental_3yr": (0, None, False, "$ per GPU-hour"),
}


# Caps where infinity (or null) means "no cap".
_INFINITE_OK = frozenset({"scenario.idle_cap_s", "scenario.tree_cap_s"})


def _range_problem(v: float, lo: float | None, hi: float | None, lo_open: bool,
                   inf_ok: bool = False) -> str | None:
    if inf_ok and v == math.inf:
        return None
    if not math.isfinite(v):
        return f"{v} is not a finite number"
    if lo is not None and (v <= lo if lo_open else v < lo):
        return f"{v:g} is {'not above' if lo_open else 'below'} {lo:g}"
    if hi is not None and v > hi:
        return f"{v:g} is above the limit of {hi:g}"
    return None


def check_ranges(sc: SweepConfig, where: Locator) -> None:
    """Every numeric setting within its sensible range (NaN and infinity never are)."""
    for key, (lo, hi, lo_open, fix) in _RANGES.items():
        v = _dotted(sc, key)
        if v is None:
            continue
        problem = _range_problem(float(v), lo, hi, lo_open, key in _INFINITE_OK)
        if problem:
            raise ConfigError.at(where, key, problem, fix)
    if sc.speculator.ngram_max < sc.speculator.ngram_min:
        raise ConfigError.at(where, "speculator.ngram_max",
                             "ngram_max is below ngram_min", "set ngram_max >= ngram_min")
    check_concurrency(sc, where)


def check_concurrency(sc: SweepConfig, where: Locator) -> None:
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


def check_combinations(sc: SweepConfig, where: Locator) -> None:
    """Rules that involve more than one file. Each names the key to change and how."""
    sc_, model = sc.scenario, sc.model
    precision = sc.precision or model.default_precision
    if model.precisions and precision not in model.precisions:
        raise ConfigError.at(where, "precision",
                             f"{model.name} has no {precision!r} weights in its recipe",
                             f"use one of {model.precisions} or add it to "
                             f"recipes/model/{model.name}.yaml")
    check_slo_settings(sc, where)
    check_chat_encoder(sc, where)
    check_dataset(sc, where)
    check_correlation_headers(sc, where)
    if sc_.api not in ("completions", "chat"):
        raise ConfigError.at(where, "scenario.api", f"unknown api {sc_.api!r}",
                             "use completions or chat")
    check_client_choices(sc, where)
    check_speculator(sc, where)
    check_correctness(sc, where)
    topo = sc.topology
    for name in ("tp", "ep", "pp"):
        if getattr(topo, name) < 1:
            key = f"topology.{name}"
            raise ConfigError.at(where, key, f"{name} must be >= 1, got "
                                 f"{getattr(topo, name)}", f"e.g. {key}=1 (tp=8: eight GPUs)")
    from harness.config.validate_catalog import check_catalog

    check_catalog(sc, where)


EVAL_TASKS = ("gsm8k", "gpqa_diamond", "swebench_lite", "capitals")


def check_correctness(sc: SweepConfig, where: Locator) -> None:
    """The eval stage and the lossless check (docs/evals.md): known tasks and modes, floors
    that are shares, temperatures that are not negative."""
    for task in sc.eval.tasks:
        if task not in EVAL_TASKS:
            raise ConfigError.at(where, "eval.tasks", f"unknown eval task {task!r}",
                                 f"use one of {EVAL_TASKS} (recipes/eval/)")
    for task, floor in sc.model.eval_floors.items():
        if task not in EVAL_TASKS or not 0.0 <= float(floor) <= 1.0:
            raise ConfigError.at(where, "model.eval_floors",
                                 f"{task}: {floor} is not a floor of a known task",
                                 f"tasks {EVAL_TASKS}, floors in [0, 1]")
    if sc.lossless.mode not in ("auto", "on", "off"):
        raise ConfigError.at(where, "lossless.mode",
                             f"unknown mode {sc.lossless.mode!r}", "use auto, on or off")
    if not sc.lossless.temperatures or any(not 0.0 <= t <= 2.0
                                           for t in sc.lossless.temperatures):
        raise ConfigError.at(where, "lossless.temperatures",
                             f"{sc.lossless.temperatures} is not a list of temperatures in [0, 2]",
                             "e.g. lossless.temperatures=[0.0,0.7]")


def check_speculator(sc: SweepConfig, where: Locator) -> None:
    """The speculator against its engine's recipe: a method it runs, a draft length, a known
    sample method (whether the engine can render it is its adapter's rule,
    harness.workloads.registry.check_sample_method), a known acceptance mode."""
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
    if spec.sample_method not in SAMPLE_METHODS:
        raise ConfigError.at(where, "speculator.sample_method",
                             f"unknown sample method {spec.sample_method!r}",
                             f"use one of {SAMPLE_METHODS}")
    if spec.acceptance.mode not in ("auto", "real", "injected"):
        raise ConfigError.at(where, "speculator.acceptance.mode",
                             f"unknown mode {spec.acceptance.mode!r}", "use auto, real or injected")
    if spec.acceptance.other_k not in ("refuse", "allow"):
        raise ConfigError.at(where, "speculator.acceptance.other_k",
                             f"unknown value {spec.acceptance.other_k!r}", "use refuse or allow")
