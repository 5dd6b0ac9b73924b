"""Rules across the fields of a sweep's correctness stages, the accuracy evals and the
lossless check (docs/evals.md); the SLO stage's are harness.config.validate_slo."""

from __future__ import annotations

from harness.config.errors import ConfigError, Where
from harness.config.schema import SweepConfig

EVAL_TASKS = ("gsm8k", "gpqa_diamond", "swebench_lite", "capitals")


def check_correctness(sc: SweepConfig, where: Where) -> None:
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
    if not sc.lossless.temperatures or any(not 0.0 <= t <= 2.0
                                           for t in sc.lossless.temperatures):
        raise ConfigError.at(where, "lossless.temperatures",
                             f"{sc.lossless.temperatures} is not a list of temperatures in [0, 2]",
                             "e.g. lossless.temperatures=[0.0,0.7]")
