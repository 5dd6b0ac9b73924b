"""Azure LLM inference trace 2023 (Splitwise) CSV: `TIMESTAMP, ContextTokens,
GeneratedTokens`. No sessions and no prefix information: every request gets hash ids of its
own, so nothing is shared."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

from harness.workloads.traces.model import (
    MAX_SECONDS,
    MAX_TOKENS,
    Trace,
    TraceError,
    TraceRequest,
    read_text,
)

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
BLOCK_SIZE = 64  # nominal: requests share nothing, so any block size gives the same prompts


def _time(s: str) -> datetime:
    s = s.strip()
    if "." in s:  # the files carry 7 fractional digits; Python parses at most 6
        head, frac = s.split(".", 1)
        s = f"{head}.{frac[:6]}"
    return datetime.fromisoformat(s)


def load(path: Path) -> list[Trace]:
    with io.StringIO(read_text(path), newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(str(path), "line 1 (header)", missing[0], "column missing",
                             f"the header must be {','.join(COLUMNS)}")
        traces: list[Trace] = []
        t0: datetime | None = None
        next_id = 0
        for n, row in enumerate(reader, 2):
            where = f"line {n}"
            try:
                ts = _time(row["TIMESTAMP"] or "")
            except ValueError:
                raise TraceError(str(path), where, "TIMESTAMP", f"not a time: {row['TIMESTAMP']!r}",
                                 "use YYYY-MM-DD HH:MM:SS.ffffff") from None
            vals = {}
            for key in ("ContextTokens", "GeneratedTokens"):
                try:
                    vals[key] = int(row[key])
                except (TypeError, ValueError):
                    raise TraceError(str(path), where, key, f"not an integer: {row[key]!r}",
                                     f"give {key} as a positive integer") from None
                if not 1 <= vals[key] <= MAX_TOKENS:
                    raise TraceError(str(path), where, key,
                                     f"{vals[key]} is outside [1, {MAX_TOKENS:,}] tokens",
                                     f"give {key} as a positive integer number of tokens")
            t0 = t0 or ts
            if ts < t0:  # a negative start time: the replay would never wait for it
                raise TraceError(str(path), where, "TIMESTAMP", f"{ts} is before the first "
                                 f"row's {t0}", "sort the rows by TIMESTAMP")
            if (ts - t0).total_seconds() > MAX_SECONDS:
                raise TraceError(str(path), where, "TIMESTAMP", f"{ts} is more than "
                                 f"{MAX_SECONDS / 86400:.0f} days after the first row's {t0}",
                                 "split the trace, or check the row's date")
            n_blocks = -(-vals["ContextTokens"] // BLOCK_SIZE)
            ids = list(range(next_id, next_id + n_blocks))
            next_id += n_blocks
            req = TraceRequest(t=(ts - t0).total_seconds(), in_tokens=vals["ContextTokens"],
                               out_tokens=vals["GeneratedTokens"], hash_ids=ids)
            traces.append(Trace(id=f"{path.stem}:{n}", source=str(path), block_size=BLOCK_SIZE,
                                items=[req], shared_scope=True))
    if not traces:
        raise TraceError(str(path), "whole file", "(rows)", "no requests", "add rows")
    return traces
