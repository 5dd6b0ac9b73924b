"""One row of a Weka trace corpus, as `datasets` yields it, made into what `parse_trace` reads.

Rows arrive in two shapes: the raw JSON line (traces.jsonl, read as text, so the fields are the
ones written) or a Parquet row (the Hub's conversion), where Arrow fills fields a row lacks with
null and may keep the mixed request/sub-agent list as JSON strings. `normalise` undoes both:
null is absent in AIPerf's schema and ours (every nullable field defaults to None or 0).

`check_row` is AIPerf's row validation (`WekaTrace.model_validate`, extra fields forbidden):
ai-dynamo/aiperf:src/aiperf/dataset/loader/weka_trace_models.py@90f31d18c57a572640729b1070a01b1bf2c7c7e4.
Numbers and hash ids are `parse_trace`'s to check (harness/workloads/traces/weka.py).
"""

from __future__ import annotations

from typing import Any

import orjson

from harness.workloads.traces.model import TraceError

# WekaTrace, WekaNormalRequest / WekaStreamingRequest, WekaSubagentEntry: field -> required
TRACE_FIELDS = {"id": True, "models": True, "block_size": True, "hash_id_scope": True,
                "tool_tokens": False, "system_tokens": False, "requests": True, "totals": False}
REQUEST_FIELDS = {"t": True, "type": True, "model": True, "in": True, "out": True,
                  "hash_ids": False, "input_types": False, "output_types": False,
                  "stop": False, "api_time": False, "think_time": False}
STREAMING_FIELDS = {**REQUEST_FIELDS, "ttft": False}
SUBAGENT_FIELDS = {"t": True, "type": True, "agent_id": True, "subagent_type": True,
                   "duration_ms": False, "total_tokens": False, "tool_use_count": False,
                   "status": True, "requests": True, "models": True, "tool_tokens": False,
                   "system_tokens": False}
_SCHEMA = "AIPerf's WekaTrace schema"


def _drop_nulls(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _drop_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        return [_drop_nulls(v) for v in obj]
    return obj


def normalise(row: dict[str, Any], path: str, where: str) -> dict[str, Any]:
    """Nulls dropped; requests (and nested requests) kept as JSON strings decoded."""
    out = {k: v for k, v in row.items() if v is not None}
    reqs = out.get("requests")
    if isinstance(reqs, list):
        out["requests"] = [_decoded(r, path, f"{where}, requests[{i}]")
                           for i, r in enumerate(reqs)]
    if isinstance(out.get("totals"), str):
        out["totals"] = _decoded(out["totals"], path, f"{where}, totals")
    return out


def _decoded(item: Any, path: str, where: str) -> Any:
    if isinstance(item, str | bytes):
        try:
            item = orjson.loads(item)
        except orjson.JSONDecodeError as e:
            raise TraceError(path, where, "(json)", f"not valid JSON ({e})",
                             "store each request as a JSON object") from None
    if isinstance(item, dict) and isinstance(item.get("requests"), list):
        item = {**item, "requests": [_decoded(r, path, f"{where}, requests[{i}]")
                                     for i, r in enumerate(item["requests"])]}
    return _drop_nulls(item)


def _fields(obj: dict[str, Any], allowed: dict[str, bool], path: str, where: str,
            what: str) -> None:
    for key in obj:
        if key not in allowed:
            raise TraceError(path, where, key, f"not a field of a {what} in {_SCHEMA}",
                             f"drop '{key}', or set scenario.dataset.strict=false to ignore "
                             "unknown fields")
    for key, required in allowed.items():
        if required and key not in obj:
            raise TraceError(path, where, key, f"missing (required for a {what})",
                             f"add '{key}', or set scenario.dataset.strict=false")


def _strings(obj: dict[str, Any], key: str, path: str, where: str) -> None:
    v = obj.get(key)
    if key in obj and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
        raise TraceError(path, where, key, f"expected a list of strings, got {v!r:.60}",
                         f"give '{key}' as a list of model names")


def _check_request(r: Any, path: str, where: str, inside_subagent: bool) -> None:
    if not isinstance(r, dict):
        raise TraceError(path, where, "requests", "expected an object",
                         "one JSON object per request or sub-agent")
    kind = r.get("type")
    if kind == "subagent" and not inside_subagent:
        _fields(r, SUBAGENT_FIELDS, path, where, "sub-agent")
        _strings(r, "models", path, where)
        inner = r.get("requests")
        if isinstance(inner, list):
            for i, q in enumerate(inner):
                _check_request(q, path, f"{where}, requests[{i}]", True)
        return
    if kind not in ("n", "s"):
        allowed = "'n' or 's' (a sub-agent's requests)" if inside_subagent else \
            "'n', 's' or 'subagent'"
        raise TraceError(path, where, "type", f"unknown type {kind!r}", f"use {allowed}")
    _fields(r, STREAMING_FIELDS if kind == "s" else REQUEST_FIELDS, path, where, "request")
    if not isinstance(r.get("model"), str):
        raise TraceError(path, where, "model", f"expected a string, got {r.get('model')!r}",
                         "give the request's model name")


def check_row(obj: dict[str, Any], path: str, where: str) -> None:
    """AIPerf's WekaTrace rules for one row (raises TraceError naming the field)."""
    _fields(obj, TRACE_FIELDS, path, where, "trace")
    if not isinstance(obj["id"], str) or not obj["id"]:
        raise TraceError(path, where, "id", f"expected a non-empty string, got {obj['id']!r}",
                         "give each trace a unique string id")
    _strings(obj, "models", path, where)
    if obj["hash_id_scope"] != "local":
        raise TraceError(path, where, "hash_id_scope",
                         f"{obj['hash_id_scope']!r}: only 'local' is supported (AIPerf's "
                         "loader rejects 'global' too)",
                         "give per-trace hash ids with hash_id_scope 'local'")
    reqs = obj["requests"]
    if isinstance(reqs, list):
        for i, r in enumerate(reqs):
            _check_request(r, path, f"{where}, requests[{i}]", False)
