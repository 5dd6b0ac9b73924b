"""The eval tasks as InferenceX runs them, as lm-eval task configs, and where their data lives.

Every setting is read from upstream's own files (SemiAnalysisAI/InferenceX@843c6254):

    utils/evals/gsm8k.yaml          the GSM8K task: prompt, 5-shot from train, exact match with
                                    strict (`#### n`) and flexible extraction, greedy, until
                                    </s> and <|im_end|>
    utils/evals/gpqa_diamond.yaml   GPQA-diamond: choices shuffled twice (utils/evals/utils.py,
                                    seed 3407), last standalone A-D
    utils/evals/thresholds.yaml     floors: 0.90 / 0.30 / 0.50, per-model GSM8K floors
    benchmarks/benchmark_lib.sh     run_lm_eval: local-chat-completions, --apply_chat_template,
                                    temperature 0, top_p 1, max_length 16384, max_tokens
                                    = context - 4096 (or half), concurrency CONC (else 64)

The data comes from `eval.data_dir` (layout in docs/evals.md) or, without one, the Hub
(upstream's dataset ids). A missing copy is a ConfigError before any engine starts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.errors import ConfigError
from harness.config.locations import data_path, looked_in
from harness.evals import capitals

UPSTREAM = "SemiAnalysisAI/InferenceX@843c6254"
# utils/evals/thresholds.yaml `default:` (keys are our task names; upstream keys GPQA by its
# lm-eval task name gpqa_diamond_cot_n_shot).
DEFAULT_FLOORS = {"gsm8k": 0.90, "gpqa_diamond": 0.30, "swebench_lite": 0.50}
# Ours, not upstream's: `capitals` (harness/evals/capitals.py) has no InferenceX threshold. Its
# floor is set from repeated runs of SmolLM2-135M on the embedded engine (docs/evals.md): the
# lowest score (0.750, 39 of 52, on make run's n-gram server; 0.788 without a speculator) less
# two binomial standard errors (2 x 0.060), rounded down to a multiple of 0.05. A wrong chat
# template scores 0.
OWN_FLOORS = {"capitals": 0.60}
TASKS = ("gsm8k", "gpqa_diamond", "swebench_lite", "capitals")
GSM8K_FILES = ("test.jsonl", "train.jsonl")  # openai/grade-school-math's JSONL
GPQA_FILE = "gpqa_diamond.csv"  # Idavidrein/gpqa's CSV


@dataclass(frozen=True, slots=True)
class TaskData:
    """Where a task's documents come from: a local copy (files by split) or a Hub id."""

    source: str  # "local" | "hub"
    path: str  # lm-eval dataset_path
    name: str | None = None  # lm-eval dataset_name
    data_files: dict[str, str] | None = None


def data_for(task: str, data_dir: str | None, where: str, repo: Path) -> TaskData:
    """The task's data, checked now: a local copy must hold every file the task reads."""
    if task == "swebench_lite":
        raise ConfigError(where, "eval.tasks",
                          "swebench_lite needs a Docker (or Modal) runtime to apply patches and "
                          "run each repository's tests, and generation by an agent loop "
                          "(InferenceX utils/evals/swebench_score.py); this harness does not "
                          "run it",
                          "use eval=gsm8k or eval=gpqa_diamond")
    if data_dir is None:
        if task == "capitals":
            raise ConfigError(where, "eval.data_dir",
                              "capitals has no Hub copy: its questions ship in this repository",
                              "set eval.data_dir=data/evals (eval=capitals does)")
        if task == "gsm8k":
            return TaskData("hub", "openai/gsm8k", "main")
        return TaskData("hub", "Idavidrein/gpqa", "gpqa_diamond")
    root = data_path(data_dir, repo)  # the user's own copy in the current directory, else shipped
    if not root.is_dir():
        raise ConfigError(where, "eval.data_dir",
                          f"no directory: looked for {looked_in(data_dir, repo)}",
                          "give the directory holding the task's files (layout: docs/evals.md; "
                          "absolute, or relative to the current directory), or set "
                          "eval.data_dir=null to load upstream's dataset from the Hub")
    if task == "gsm8k":
        files = {"test": root / "gsm8k" / "test.jsonl", "train": root / "gsm8k" / "train.jsonl"}
    elif task == "capitals":
        files = {"test": root / "capitals" / capitals.FILE}
    else:
        files = {"train": root / "gpqa" / GPQA_FILE}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise ConfigError(where, "eval.data_dir",
                          f"no local copy of {task}: {', '.join(missing)} missing",
                          "copy the files there (layout: docs/evals.md), or set "
                          "eval.data_dir=null to load upstream's dataset from the Hub")
    kind = "csv" if task == "gpqa_diamond" else "json"
    return TaskData("local", kind, None, {k: str(v) for k, v in files.items()})


def gsm8k_config(data: TaskData, num_fewshot: int) -> dict[str, Any]:
    """utils/evals/gsm8k.yaml (upstream's changed doc_to_text; lm-evaluation-harness#3411)."""
    cfg: dict[str, Any] = {
        "task": "gsm8k", "tag": ["math_word_problems"], "output_type": "generate_until",
        "training_split": "train", "fewshot_split": "train", "test_split": "test",
        "doc_to_text": "Question: {{question}}\nEnd your response with the answer on the last "
                       "line, formatted as: #### [number]\nAnswer:",
        "doc_to_target": "{{answer}}",
        "metric_list": [{"metric": "exact_match", "aggregation": "mean",
                         "higher_is_better": True, "ignore_case": True,
                         "ignore_punctuation": False,
                         "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}],
        "generation_kwargs": {"until": ["</s>", "<|im_end|>"], "do_sample": False,
                              "temperature": 0.0},
        "repeats": 1, "num_fewshot": num_fewshot,
        "filter_list": [
            {"name": "strict-match", "filter": [
                {"function": "regex", "group_select": -1,
                 "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                {"function": "take_first"}]},
            {"name": "flexible-extract", "filter": [
                {"function": "regex", "group_select": -1,
                 "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"},
                {"function": "take_first"}]},
        ],
        "metadata": {"version": 3.0},
    }
    return {**cfg, **_dataset_fields(data)}


def gpqa_process_docs(dataset: Any, n_repeats: int = 2, seed: int = 3407) -> Any:
    """Each question twice, its four choices shuffled (upstream utils/evals/utils.py's rule,
    written here: the same permutations for the same seed)."""
    import datasets

    rng = random.Random(seed)
    rows = []
    for r in range(n_repeats):
        for doc in dataset:
            base = [doc["Correct Answer"], doc["Incorrect Answer 1"],
                    doc["Incorrect Answer 2"], doc["Incorrect Answer 3"]]
            perm = rng.sample(range(4), 4)
            new = dict(doc)
            new["A"], new["B"], new["C"], new["D"] = (base[j] for j in perm)
            new["answer"] = "ABCD"[perm.index(0)]
            new["repeat_id"] = r
            rows.append(new)
    return datasets.Dataset.from_list(rows)


def gpqa_config(data: TaskData, num_fewshot: int) -> dict[str, Any]:
    """utils/evals/gpqa_diamond.yaml (task gpqa_diamond_cot_n_shot; zero-shot by default)."""
    cfg: dict[str, Any] = {
        "task": "gpqa_diamond_cot_n_shot", "output_type": "generate_until",
        "training_split": "train", "validation_split": "train", "test_split": None,
        "process_docs": gpqa_process_docs,
        "doc_to_text": "{{Question}}\n\n(A) {{A}}\n(B) {{B}}\n(C) {{C}}\n(D) {{D}}\n\n"
                       "Express your final answer as the corresponding option 'A', 'B', "
                       "'C', or 'D'.\n",
        "doc_to_target": "answer",
        "filter_list": [{"name": "extract_abcd", "filter": [
            {"function": "regex", "regex_pattern": "(?i)\\b\\(?([A-D])\\)?\\b",
             "group_select": -1},
            {"function": "take_first"}]}],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean",
                         "higher_is_better": True, "ignore_case": True}],
    }
    if num_fewshot:
        cfg["num_fewshot"] = num_fewshot
    return {**cfg, **_dataset_fields(data)}


def _dataset_fields(data: TaskData) -> dict[str, Any]:
    out: dict[str, Any] = {"dataset_path": data.path}
    if data.name:
        out["dataset_name"] = data.name
    if data.data_files:
        out["dataset_kwargs"] = {"data_files": data.data_files}
    return out


def task_config(task: str, data: TaskData, num_fewshot: int | None) -> dict[str, Any]:
    if task == "gsm8k":
        return gsm8k_config(data, 5 if num_fewshot is None else num_fewshot)
    if task == "capitals":
        return capitals.capitals_config(_dataset_fields(data), num_fewshot or 0)
    return gpqa_config(data, 0 if num_fewshot is None else num_fewshot)


def floor_for(task: str, model_floors: dict[str, float]) -> tuple[float, str]:
    """The model recipe's floor for the task, else upstream's default (and where it came
    from, as validate_scores.py's resolve_threshold says it)."""
    if task in model_floors:
        return float(model_floors[task]), "model.eval_floors"
    if task in OWN_FLOORS:
        return OWN_FLOORS[task], "default (docs/evals.md: set from SmolLM2-135M's runs)"
    return DEFAULT_FLOORS[task], "default (InferenceX utils/evals/thresholds.yaml)"
