"""Calibration prompts from SPEED-Bench, the data InferenceX's golden AL curves were measured
on: `nvidia/SPEED-Bench`, subset `qualitative`, split `test`, category `coding` (80 prompts),
loaded through Hugging Face `datasets`.

On a connected machine the id is fetched from the hub (and cached by `datasets`). A local
copy works the same way and needs no network: a directory written by
`Dataset.save_to_disk`, a data directory, or one JSON/JSONL/Parquet/CSV file with the same
columns (`category`, and `turns`: a list of user turns).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPEED_BENCH = "nvidia/SPEED-Bench"
# Rows whose source may not be redistributed ship this text instead of the prompt (it is
# filled in by NVIDIA's preparation script); such a row is not a prompt and is skipped.
PLACEHOLDER = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE"
_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}


@dataclass(frozen=True)
class DatasetSpec:
    id: str = SPEED_BENCH  # hub id, or a local directory or file
    subset: str | None = "qualitative"  # the hub dataset's config name
    split: str = "test"
    category: str | None = "coding"  # None: every category
    limit: int | None = None  # at most this many prompts (None: all, as InferenceX)


def open_rows(spec: DatasetSpec) -> Iterable[Mapping[str, Any]]:
    """The dataset's rows, through `datasets`, wherever `spec.id` points."""
    import datasets

    path = Path(spec.id).expanduser()
    if path.is_file():
        builder = _FILE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise ValueError(f"{path}: not a dataset file (use {', '.join(_FILE_BUILDERS)})")
        # a single data file has one split, which `datasets` names "train"
        return datasets.load_dataset(builder, data_files=str(path), split="train")
    if (path / "state.json").is_file() or (path / "dataset_dict.json").is_file():
        saved = datasets.load_from_disk(str(path))  # written by save_to_disk
        return saved[spec.split] if isinstance(saved, datasets.DatasetDict) else saved
    # a hub id (network) or a local directory of data files
    return datasets.load_dataset(spec.id if not path.is_dir() else str(path),
                                 spec.subset if not path.is_dir() else None, split=spec.split)


def first_turn(row: Mapping[str, Any]) -> str:
    """The row's first user turn: SPEED-Bench's `turns` (a list of strings), or `messages` /
    `prompt` in look-alike files. Only the first turn is sent, as `vllm bench serve` does
    with single-turn requests."""
    turns = row.get("turns") or row.get("messages") or row.get("prompt") or ""
    first = turns[0] if isinstance(turns, list | tuple) and turns else turns
    if isinstance(first, Mapping):
        first = first.get("content") or first.get("text") or ""
    return str(first or "")


@dataclass(frozen=True)
class LoadedPrompts:
    conversations: list[list[dict[str, str]]]  # one user message each
    skipped: int  # placeholders and empty rows of the category
    description: str  # the dataset column of the table's rows


def load_conversations(spec: DatasetSpec) -> LoadedPrompts:
    """The category's prompts as one-message conversations, in the dataset's order."""
    out: list[list[dict[str, str]]] = []
    skipped = 0
    for row in open_rows(spec):
        if spec.category and str(row.get("category", "")) != spec.category:
            continue
        text = first_turn(row)
        if not text.strip() or PLACEHOLDER in text:
            skipped += 1
            continue
        out.append([{"role": "user", "content": text}])
        if spec.limit is not None and len(out) >= spec.limit:
            break
    if not out:
        raise ValueError(f"{spec.id}: no usable prompts in split {spec.split!r}"
                         + (f", category {spec.category!r}" if spec.category else ""))
    name = "SPEED-Bench" if spec.id == SPEED_BENCH else Path(spec.id).name or spec.id
    where = f"{spec.id} {spec.subset}/{spec.split}" if spec.id == SPEED_BENCH else spec.id
    cat = f"{spec.category} category" if spec.category else "all categories"
    return LoadedPrompts(out, skipped, f"{name} ({where}), {cat}: {len(out)} prompts"
                         + (f" ({skipped} placeholders skipped)" if skipped else ""))
