"""The AgentX corpus by name: Weka trace rows streamed through Hugging Face `datasets`
(docs/corpus.md).

A corpus is a Hub dataset id (`semianalysisai/cc-traces-weka-062126`, `...-256k`) or a local
copy of its layout: `traces.jsonl` (one trace per line, what the dataset card's config names) or
Parquet (what the Hub's conversion serves, `revision: refs/convert/parquet`). An id resolves to
its snapshot in the Hub cache; only a connected machine without HF_HUB_OFFLINE /
HF_DATASETS_OFFLINE downloads it, once, as `hf download --repo-type dataset ID` would.

Rows are streamed one at a time (`streaming=True`): statistics, the fit check and selection by
length never hold the corpus. What a replay keeps is the selection (`max_entries`, AgentX's
`--num-dataset-entries 393`), parsed, with each trace's hash ids sharing one int object per id.

JSON Lines go through datasets' `text` builder and are parsed per row, not through its `json`
builder: that one fixes the schema from the first 10 MB, and the corpus's request lists mix
requests and sub-agents, so a sub-agent first seen after 10 MB fails its cast (measured on
datasets 5.2), and strict validation needs the fields as written, not null-filled.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness.config.errors import ConfigError
from harness.config.locations import data_path, looked_in
from harness.config.schema import DatasetConfig
from harness.workloads.traces.corpus_rows import check_row, normalise
from harness.workloads.traces.model import Trace, TraceError
from harness.workloads.traces.weka import parse_trace

# AgentX's corpora (docs/upstream/agentx.md §1.1, §4): the full one for dsv4, glm5.2,
# minimaxm3 and kimik3; the 256k-capped one for every other model.
AGENTX_CORPUS = "semianalysisai/cc-traces-weka-062126"
AGENTX_CORPUS_256K = "semianalysisai/cc-traces-weka-062126-256k"
_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}
_OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
PARQUET_ROWS_PER_BATCH = 8  # a Parquet row group's rows are decoded this many at a time
# Text read per batch: a corpus row is ~4.6 MB, so a batch is about one row whatever this is;
# datasets' 10 MB default holds ~100 MB more in copies of the batch (benchmarks/corpus_memory.py)
TEXT_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class CorpusSource:
    label: str  # what errors and records name: the dataset id, else the local directory
    base: Path
    files: tuple[Path, ...]
    fmt: str  # jsonl | parquet
    split: str = "train"
    revision: str | None = None  # the snapshot's commit, for an id read from the Hub cache

    def where(self, row: int) -> str:
        if self.fmt == "jsonl" and len(self.files) == 1:
            return f"row {row} (line {row + 1} of {self.files[0].name})"
        return f"row {row}"


def offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in _OFFLINE_VARS)


def _snapshot(cfg: DatasetConfig, where: str) -> Path:
    """The id's snapshot directory in the Hub cache, downloaded only when allowed."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    patterns = list(cfg.data_files) or ["*.jsonl", "*.parquet", "**/*.parquet", "*.md"]
    try:
        return Path(snapshot_download(cfg.id, repo_type="dataset", revision=cfg.revision,
                                      cache_dir=cfg.cache_dir, allow_patterns=patterns,
                                      local_files_only=offline()))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as e:
        state = "offline (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)" if offline() else \
            "not in the cache and not downloadable from here"
        raise ConfigError(where, "scenario.dataset.id", f"dataset {cfg.id!r}"
                          f"{'@' + cfg.revision if cfg.revision else ''} is {state}: "
                          f"{str(e).splitlines()[0][:200]}",
                          f"on a connected machine run `hf download --repo-type dataset "
                          f"{cfg.id}` (`hf auth login` first for a gated one), or run the "
                          "harness there without the offline variables, or point "
                          "scenario.dataset.local_dir at a copy") from None


def _split_files(base: Path, split: str) -> list[Path]:
    jsonl = base / "traces.jsonl"
    if jsonl.is_file():  # the corpus's own layout: the card maps traces.jsonl to "train"
        return [jsonl] if split == "train" else []
    # the Hub's layouts go at most three deep (default/train/0000.parquet): never a deep walk
    parquet = sorted(p for pat in ("*.parquet", "*/*.parquet", "*/*/*.parquet")
                     for p in base.glob(pat) if p.is_file())
    named = [p for p in parquet if any(part == split or part.startswith((f"{split}-",
                                                                          f"{split}."))
                                       for part in p.relative_to(base).parts)]
    return named or (parquet if split == "train" else [])


def _globbed(base: Path, patterns: Iterable[str], where: str) -> list[Path]:
    files: list[Path] = []
    for pat in patterns:
        hits = sorted(p for p in base.glob(pat) if p.is_file())
        if not hits:
            raise ConfigError(where, "scenario.dataset.data_files",
                              f"{pat!r} matches no file in {base}",
                              "give paths or globs relative to the dataset directory")
        files.extend(h for h in hits if h not in files)
    return files


def resolve(cfg: DatasetConfig, root: Path, where: str) -> CorpusSource:
    """Which files hold the split, and their format; no row is read."""
    if cfg.local_dir:
        base = data_path(cfg.local_dir, root)  # the user's own directory first, else shipped
        if not base.is_dir():
            raise ConfigError(where, "scenario.dataset.local_dir",
                              f"no directory: looked for {looked_in(cfg.local_dir, root)}",
                              "give a directory holding traces.jsonl or Parquet files "
                              "(absolute, or relative to the current directory)")
    elif cfg.id:
        base = _snapshot(cfg, where)
    else:
        raise ConfigError(where, "scenario.dataset", "neither an id nor a local_dir",
                          f"set scenario.dataset.id (e.g. {AGENTX_CORPUS_256K}) or "
                          "scenario.dataset.local_dir")
    label = cfg.id or str(base)
    files = _globbed(base, cfg.data_files, where) if cfg.data_files else \
        _split_files(base, cfg.split)
    if not files:
        raise ConfigError(where, "scenario.dataset.split",
                          f"no data files for split {cfg.split!r} in {base}",
                          "the corpus has traces.jsonl (split train) or Parquet files; set "
                          "scenario.dataset.data_files to name them")
    fmts = {_FORMATS.get(p.suffix) for p in files}
    if None in fmts or len(fmts) != 1:
        raise ConfigError(where, "scenario.dataset.data_files",
                          f"{[p.name for p in files][:5]} are not all JSON Lines or all Parquet",
                          "name .jsonl files (one trace per line) or .parquet files")
    # an id's snapshot directory is named by the commit it holds: the exact corpus version
    revision = base.name if cfg.id and not cfg.local_dir else cfg.revision
    return CorpusSource(label, base, tuple(files), fmts.pop(), cfg.split, revision)


def stream_rows(src: CorpusSource) -> Iterator[dict[str, Any]]:
    """The split's rows, one at a time, through `datasets` (streaming): a JSON line as text, a
    Parquet row as a dict. Read errors name the corpus."""
    import datasets

    builder = "text" if src.fmt == "jsonl" else "parquet"
    extra = {"batch_size": PARQUET_ROWS_PER_BATCH} if builder == "parquet" else \
        {"chunksize": TEXT_CHUNK_BYTES}
    ds = datasets.load_dataset(builder, data_files={src.split: [str(f) for f in src.files]},
                               split=src.split, streaming=True, **extra)
    it = iter(ds)
    try:
        while True:
            try:
                row = next(it)
            except StopIteration:
                return
            except (OSError, ValueError) as e:  # UnicodeDecodeError, ArrowInvalid, ...
                raise TraceError(src.label, "reading the data files", "(file)",
                                 f"{type(e).__name__}: {str(e).splitlines()[0][:200]}",
                                 "check the files are UTF-8 JSON Lines or valid Parquet") from None
            yield row
    finally:
        # A Parquet stream left early must be torn down while Arrow is alive, else its reader
        # threads abort the interpreter at exit (huggingface/datasets#7566).
        it.close()
        del it, ds
        gc.collect()


def _row_object(row: dict[str, Any], src: CorpusSource, where: str) -> dict[str, Any]:
    if src.fmt == "jsonl":
        try:
            obj = orjson.loads(row["text"])
        except orjson.JSONDecodeError as e:
            raise TraceError(src.label, where, "(json)", f"not valid JSON ({e})",
                             "one complete JSON trace object per line") from None
        if not isinstance(obj, dict):
            raise TraceError(src.label, where, "(trace)", "expected a JSON object",
                             "one trace object per line")
        row = obj
    return normalise(row, src.label, where)


def iter_traces(src: CorpusSource, strict: bool = True) -> Iterator[Trace]:
    """Every row validated and parsed, in dataset order; duplicate ids are errors (AIPerf)."""
    seen: set[str] = set()
    for i, row in enumerate(stream_rows(src)):
        where = src.where(i)
        if src.fmt == "jsonl" and not row["text"].strip():
            continue
        obj = _row_object(row, src, where)
        tid = obj.get("id")
        if strict:
            check_row(obj, src.label, f"{where}, trace {tid}")
        if tid in seen:
            raise TraceError(src.label, f"{where}, trace {tid}", "id", "duplicate trace id",
                             "give every trace (row) its own id")
        seen.add(str(tid))
        trace = parse_trace(obj, src.label, where, strict)
        trace.meta = {**trace.meta, "dataset": src.label, "dataset_revision": src.revision,
                      "row": i}
        yield trace


def share_hash_ids(trace: Trace) -> Trace:
    """One int object per distinct hash id of a kept trace, shared by every request that lists
    it: turns resend their prefix's ids, so a held corpus costs ~11 bytes per listed id instead
    of ~39 (an int object each; benchmarks/corpus_memory.py)."""
    pool: dict[int, int] = {}
    for r in trace.requests():
        # map over a C method: no bytecode per id (parse_trace checked they are integers)
        r.hash_ids = list(map(pool.setdefault, r.hash_ids, r.hash_ids))
    return trace


def peak_context(trace: Trace) -> int:
    """The trace's longest request, in + out tokens (AIPerf's `_trace_peak_context_length`)."""
    return max((r.in_tokens + r.out_tokens for r in trace.requests()), default=0)


def select(traces: Iterable[Trace], max_entries: int = 0,
           max_context_tokens: int = 0) -> Iterator[Trace]:
    """AIPerf's filter-then-cap: drop traces whose peak context exceeds the limit, then keep
    the first `max_entries` eligible ones (never a prefix of the raw rows)."""
    kept = 0
    for tr in traces:
        if max_context_tokens and peak_context(tr) > max_context_tokens:
            continue
        yield tr
        kept += 1
        if max_entries and kept >= max_entries:
            return


def load_corpus(cfg: DatasetConfig, root: Path, where: str) -> list[Trace]:
    """The selected traces of a corpus, parsed for a replay. Every row is read and validated,
    as AIPerf preflights the whole corpus before it selects; only the selection is kept."""
    src = resolve(cfg, root, where)
    traces: list[Trace] = []
    for tr in iter_traces(src, cfg.strict):
        full = bool(cfg.max_entries) and len(traces) >= cfg.max_entries
        if not full and not (cfg.max_context_tokens and peak_context(tr) > cfg.max_context_tokens):
            traces.append(share_hash_ids(tr))
    if not traces and cfg.max_context_tokens:
        raise ConfigError(where, "scenario.dataset.max_context_tokens",
                          f"no trace of {src.label} fits within {cfg.max_context_tokens} tokens",
                          "raise scenario.dataset.max_context_tokens (0 keeps every trace)")
    if not traces:
        raise TraceError(src.label, "whole split", "(rows)", f"no traces in split {src.split!r}",
                         "give one trace object per row")
    return traces
