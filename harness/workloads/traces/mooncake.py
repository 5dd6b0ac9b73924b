"""Mooncake FAST'25 JSONL traces: `{timestamp (ms), input_length, output_length, hash_ids}`
per line, 512-token blocks, hash ids shared across the whole file, no sessions: each request
becomes a one-request session."""

from __future__ import annotations

import json
from pathlib import Path

from harness.workloads.traces.model import (
    MAX_SECONDS,
    MAX_TOKENS,
    Trace,
    TraceError,
    TraceRequest,
    check_hash_ids,
    read_text,
)

BLOCK_SIZE = 512
# field: (lowest, highest, unit); the timestamp is milliseconds from the trace's start
LIMITS = {"timestamp": (0, int(MAX_SECONDS * 1000), "ms"),
          "input_length": (1, MAX_TOKENS, "tokens"), "output_length": (1, MAX_TOKENS, "tokens")}


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
        for key, (low, high, unit) in LIMITS.items():
            v = obj.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
                shown = repr(v) if len(repr(v)) <= 24 else f"{repr(v)[:12]}..."
                raise TraceError(str(path), where, key,
                                 f"expected an integer in [{low}, {high:,}] {unit}, got {shown}",
                                 f"set '{key}' to an integer number of {unit} in that range")
        ids = check_hash_ids(obj.get("hash_ids"), str(path), where, "512-token")
        req = TraceRequest(t=obj["timestamp"] / 1000.0, in_tokens=obj["input_length"],
                           out_tokens=obj["output_length"], hash_ids=ids)
        traces.append(Trace(id=f"{path.stem}:{n}", source=str(path), block_size=BLOCK_SIZE,
                            items=[req], shared_scope=True))
    if not traces:
        raise TraceError(str(path), "whole file", "(request)", "no requests", "add requests")
    return traces
