"""`harness traces stats`: what trace files or a whole corpus hold (a corpus is streamed: a
Hub dataset id or a local copy's directory, docs/corpus.md)."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from harness.cli.parser import Parser
from harness.config.locations import data_path, looked_in

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")  # owner/name, as scenario.dataset.id


def _parser() -> argparse.ArgumentParser:
    from harness.workloads.traces import FORMATS

    p = Parser(prog="harness traces", description="Inspect traces.")
    sub = p.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("stats", help="requests, sessions, sub-agents, ISL/OSL, think times, "
                                      "theoretical prefix-hit rate")
    st.add_argument("sources", nargs="+", metavar="SOURCE",
                    help="a trace file; a dataset directory (traces.jsonl or Parquet); or a "
                         "Hub dataset id such as semianalysisai/cc-traces-weka-062126")
    st.add_argument("--format", choices=sorted(FORMATS), default=None,
                    help="trace files: default detected from the file")
    st.add_argument("--revision", default=None, help="dataset id: commit, tag or branch")
    st.add_argument("--split", default="train")
    st.add_argument("--data-files", nargs="*", default=[],
                    help="dataset: globs inside it (default: traces.jsonl, else its Parquet)")
    st.add_argument("--cache-dir", default=None, help="dataset id: the Hub cache")
    st.add_argument("--max-entries", type=int, default=0,
                    help="the first N eligible traces (AgentX: 393); 0 every trace")
    st.add_argument("--max-context-tokens", type=int, default=0,
                    help="skip traces whose longest request exceeds this; 0 keep all")
    st.add_argument("--lenient", action="store_true",
                    help="accept fields outside AIPerf's WekaTrace schema")
    return p


def _corpus_stats(source: str, a: argparse.Namespace) -> str:
    from harness.config.schema import DatasetConfig
    from harness.workloads.traces.corpus import iter_traces, resolve, select
    from harness.workloads.traces.corpus_stats import streaming_stats
    from harness.workloads.traces.stats import format_stats

    path = data_path(source)  # the user's own file or directory first, else the shipped one
    local = str(path.parent) if path.is_file() else source if path.is_dir() else None
    files = [path.name] if path.is_file() else list(a.data_files)  # a single Parquet file
    cfg = DatasetConfig(id=None if local else source, local_dir=local, revision=a.revision,
                        split=a.split, data_files=files,
                        cache_dir=a.cache_dir, max_entries=a.max_entries,
                        max_context_tokens=a.max_context_tokens, strict=not a.lenient)
    t0 = time.perf_counter()
    src = resolve(cfg, Path.cwd(), "harness traces stats")  # local is absolute by now
    acc = streaming_stats(select(iter_traces(src, cfg.strict), cfg.max_entries,
                                 cfg.max_context_tokens))
    dt = time.perf_counter() - t0
    title = f"{src.label} (split {src.split}, {len(src.files)} {src.fmt} file(s))"
    return "\n".join([format_stats(acc.result(len(src.files)), title),
                      f"  longest request {acc.longest:,} tokens (in + out); "
                      f"{acc.sessions} traces streamed in {dt:.1f} s"])


def _one_corpus(source: str, a: argparse.Namespace) -> str:
    """A corpus's statistics; a bad source is one line (the CLI's rule for bad arguments)."""
    from harness.config.errors import ConfigError
    from harness.workloads.traces import TraceError

    path = data_path(source)
    if not path.exists() and (Path(source).is_absolute() or not _HUB_ID.match(source)):
        raise TraceError(source, "whole file", "(path)",
                         f"no such file: looked for {looked_in(source)}",
                         "give a trace file, a dataset directory (traces.jsonl or Parquet) or "
                         "a Hub dataset id (owner/name)")
    try:
        return _corpus_stats(source, a)
    except ConfigError as e:
        problem = f"no such file, and {e.problem}" if path.is_dir() else e.problem
        raise TraceError(source, "dataset", e.key, problem, e.fix) from None


def traces_command(argv: list[str]) -> int:
    from harness.workloads.traces import load_traces
    from harness.workloads.traces.stats import format_stats, trace_stats

    a = _parser().parse_args(argv)
    for source in a.sources:
        path = data_path(source)
        if path.is_file() and path.suffix != ".parquet":
            print(format_stats(trace_stats(load_traces(path, a.format)), source))
        else:
            print(_one_corpus(source, a))
    return 0
