"""Mooncake FAST'25 JSONL traces: `{timestamp (ms), input_length, output_length, hash_ids}`
per line, 512-token blocks, hash ids shared across the whole file, no sessions: each request
becomes a one-request session."""

from __future__ import annotations

import json
from pathlib import Path

from harness.workloads.traces.model import Trace, TraceError, TraceRequest, read_text

BLOCK_SIZE = 512


def load(path: Path) -> list[Trace]:
    traces: list[Trace] = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise TraceError(str(path), where, "(json)", f"not valid JSON ({e.msg})",
                             "one JSON object per line") from None
        if not isinstance(obj, dict):
            raise TraceError(str(path), where, "(request)", "expected a JSON object",
                             "one request object per line")
        for key in ("timestamp", "input_length", "output_length"):
            v = obj.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key != "timestamp"
                                                                      else 0):
                raise TraceError(str(path), where, key, f"expected a positive integer, got {v!r}",
                                 f"set '{key}' to an integer")
        ids = obj.get("hash_ids")
        if not isinstance(ids, list) or not all(isinstance(h, int) for h in ids):
            raise TraceError(str(path), where, "hash_ids", "expected a list of integers",
                             "give the 512-token block hashes as integers")
        req = TraceRequest(t=obj["timestamp"] / 1000.0, in_tokens=obj["input_length"],
                           out_tokens=obj["output_length"], hash_ids=ids)
        traces.append(Trace(id=f"{path.stem}:{n}", source=str(path), block_size=BLOCK_SIZE,
                            items=[req], shared_scope=True))
    if not traces:
        raise TraceError(str(path), "whole file", "(request)", "no requests", "add requests")
    return traces
