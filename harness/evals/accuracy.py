"""Run an accuracy eval through lm-eval against a running OpenAI-compatible server, as
InferenceX's `run_lm_eval` does (benchmarks/benchmark_lib.sh @843c6254):

    lm_eval --model local-chat-completions --apply_chat_template --tasks <task yaml>
      --model_args model=M,base_url=<url>/v1/chat/completions,eos_string=</s>,max_retries=5,
                   num_concurrent=CONC,timeout=1800,tokenized_requests=False,max_length=L
      --gen_kwargs max_tokens=<L - 4096, or L/2; at most 16384>,temperature=0,top_p=1
      [--limit N]

Here the same call is made through `lm_eval.simple_evaluate`, with the task configs of
harness.evals.tasks. The result keeps every exact-match metric; the floor is judged on each of
them, as upstream's validate_scores.py checks every `exact_match,*` metric.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.config.schema import EvalConfig
from harness.evals import capitals
from harness.evals.tasks import TaskData, data_for, floor_for, task_config

log = logging.getLogger(__name__)
# The metric a task's score is (EVALS.md: "score: primary metric (exact match for GSM8K)").
PRIMARY = {"gsm8k": "exact_match,strict-match",
           "gpqa_diamond_cot_n_shot": "exact_match,extract_abcd",
           "capitals": f"{capitals.METRIC},none"}
# The metrics a floor is judged on: every exact-match metric (validate_scores.py), and the
# capitals task's own (a reply naming the capital; harness/evals/capitals.py).
SCORED = ("exact_match,", f"{capitals.METRIC},")


@dataclass(frozen=True, slots=True)
class EvalResult:
    """One task's result on one server: what a run and each point of the job record."""

    task: str  # our name (gsm8k, gpqa_diamond)
    lm_eval_task: str
    version: str  # the task config's version (lm-eval's `versions`)
    score: float  # the primary metric
    stderr: float | None
    n: int  # documents scored
    metrics: dict[str, float]  # every exact_match metric (strict, flexible...)
    floor: float
    floor_source: str
    settings: dict[str, Any] = field(default_factory=dict)  # what was sent, and lm-eval's own
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        """Every exact-match metric at or above the floor (validate_scores.py)."""
        return all(v >= self.floor for v in self.metrics.values())

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EvalResult:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def max_gen_toks(ec: EvalConfig, context: int) -> tuple[int, int]:
    """(max_length, max_tokens): upstream's budget, the context capped at the model's."""
    length = min(ec.max_length, context)
    if ec.max_gen_toks is not None:
        return length, ec.max_gen_toks
    budget = length - 4096 if length > 4096 else length // 2
    return length, min(budget, 16384)


def settings_of(ec: EvalConfig, model: str, concurrency: int, context: int,
                data: TaskData, num_fewshot: int) -> dict[str, Any]:
    length, tokens = max_gen_toks(ec, context)
    return {"model_type": "local-chat-completions", "apply_chat_template": True,
            "fewshot_as_multiturn": True, "num_fewshot": num_fewshot, "model": model,
            "num_concurrent": concurrency, "max_length": length, "max_tokens": tokens,
            "temperature": 0.0, "top_p": 1.0, "eos_string": "</s>", "max_retries": 5,
            "timeout_s": ec.timeout_s, "tokenized_requests": False, "limit": ec.limit,
            "data_source": data.source, "data": data.data_files or data.path,
            "upstream": "SemiAnalysisAI/InferenceX@843c6254 benchmarks/benchmark_lib.sh "
                        "run_lm_eval, utils/evals/*.yaml"}


def run_task(task: str, base_url: str, model: str, ec: EvalConfig, concurrency: int,
             context: int, model_floors: dict[str, float], repo: Path,
             api_key: str = "EMPTY", where: str = "the eval recipe") -> EvalResult:
    """Score one task against the server at `base_url` (its /v1/chat/completions)."""
    import lm_eval

    data = data_for(task, ec.data_dir, where, repo)
    cfg = task_config(task, data, ec.num_fewshot)
    nshot = int(cfg.get("num_fewshot") or 0)
    settings = settings_of(ec, model, concurrency, context, data, nshot)
    model_args = {"model": model, "base_url": f"{base_url}/v1/chat/completions",
                  "api_key": api_key, "eos_string": "</s>", "max_retries": 5,
                  "num_concurrent": concurrency, "timeout": int(ec.timeout_s),
                  "tokenized_requests": False, "max_length": settings["max_length"]}
    t0 = time.monotonic()
    out = lm_eval.simple_evaluate(
        model="local-chat-completions", model_args=model_args, tasks=[cfg],
        apply_chat_template=True, fewshot_as_multiturn=True, limit=ec.limit,
        gen_kwargs={"max_tokens": settings["max_tokens"], "temperature": 0, "top_p": 1},
        system_instruction=ec.system_instruction, log_samples=False,
        bootstrap_iters=1000)
    if out is None:
        raise RuntimeError(f"lm-eval returned no result for {task}")
    name = cfg["task"]
    floor, source = floor_for(task, model_floors)
    return result_from(task, name, out, floor, source, settings, time.monotonic() - t0)


def result_from(task: str, name: str, out: dict[str, Any], floor: float, source: str,
                settings: dict[str, Any], duration_s: float) -> EvalResult:
    """lm-eval's result dictionary as our record."""
    res = out["results"][name]
    metrics = {k: float(v) for k, v in res.items()
               if k.startswith(SCORED) and isinstance(v, int | float)}
    primary = PRIMARY.get(name, next(iter(metrics), ""))
    metric, _, filt = primary.partition(",")
    err_key = f"{metric}_stderr,{filt}"
    stderr = res.get(err_key)
    n_samples = out.get("n-samples", {}).get(name, {})
    n = int(n_samples.get("effective") or n_samples.get("original") or 0)
    cfg_used = out.get("configs", {}).get(name, {})
    return EvalResult(
        task=task, lm_eval_task=name, version=str(out.get("versions", {}).get(name, "")),
        score=metrics.get(primary, math.nan),
        stderr=float(stderr) if isinstance(stderr, int | float) else None, n=n,
        metrics=metrics, floor=floor, floor_source=source,
        settings={**settings, "lm_eval_version": _lm_eval_version(),
                  "fewshot_split": cfg_used.get("fewshot_split"),
                  "generation_kwargs": cfg_used.get("generation_kwargs")},
        duration_s=round(duration_s, 3))


def _lm_eval_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lm_eval")
    except PackageNotFoundError:
        return "unknown"
