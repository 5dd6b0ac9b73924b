"""AgentX / WEKA "Weka" JSON traces: one trace per file, or one per line (JSONL).

Schema (scenarios/traces/README.md): `{id, models, block_size, hash_id_scope, requests}`;
a request `{t, type: "n"|"s", in, out, hash_ids, think_time, api_time, ...}`; a sub-agent
`{t, type: "subagent", agent_id, subagent_type, duration_ms, requests: [...]}`, nested.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from harness.workloads.traces.corpus_rows import (
    STREAMING_FIELDS,
    SUBAGENT_FIELDS,
    TRACE_FIELDS,
)
from harness.workloads.traces.model import (
    MAX_SECONDS,
    MAX_TOKENS,
    SubAgent,
    Trace,
    TraceError,
    TraceRequest,
    check_hash_ids,
    read_text,
)

log = logging.getLogger(__name__)
# Which fields each kind of entry may carry (AIPerf's WekaTrace models, corpus_rows.py). A field
# of another kind (a request's think_time on a sub-agent) is read by nobody: the user believes
# it applies and it does not, so it is never accepted silently.
_KIND_FIELDS = {"request": set(STREAMING_FIELDS), "sub-agent": set(SUBAGENT_FIELDS),
                "trace": set(TRACE_FIELDS)}
_warned: set[tuple[str, str, str]] = set()  # (file, kind, field): each warned once per file


def check_fields(obj: dict[str, Any], kind: str, path: str, where: str, strict: bool) -> None:
    """Fields that do not belong to this kind of entry: with `strict` an error naming the entry
    and the field; otherwise a warning naming the field once per file (its first entry).
    A NaN or infinite value is an error in any field, read or not (`_non_finite`)."""
    for key in obj:
        bad = _non_finite(obj[key])
        if bad is not None:
            field_name = key + bad[0]
            raise TraceError(path, where, field_name, f"{bad[1]} is not a finite number",
                             f"give '{field_name}' as a finite number (JSON has no NaN or "
                             "Infinity; a tool that wrote them wrote a broken trace)")
        if key in _KIND_FIELDS[kind]:
            continue
        other = next((k for k, f in _KIND_FIELDS.items() if k != kind and key in f), None)
        what = (f"'{key}' is a field of a {other}, not of a {kind} (it would be ignored)"
                if other else f"'{key}' is not a field of a {kind} in the Weka trace schema")
        if strict:
            raise TraceError(path, where, key, what,
                             f"drop '{key}' from this {kind}, or move it to where it belongs")
        if (path, kind, key) not in _warned:
            _warned.add((path, kind, key))
            log.warning("%s: %s: %s; ignored (first such entry; later ones not repeated)",
                        path, where, what)


def _non_finite(v: Any, depth: int = 0) -> tuple[str, float] | None:
    """(".sub.key", value) of a NaN or infinity in a field's value (nested objects such as
    `totals` included), else None. Lists are not walked: request lists are checked entry by
    entry, hash ids must be integers."""
    if isinstance(v, float):
        return None if math.isfinite(v) else ("", v)
    if isinstance(v, dict) and depth < MAX_NESTING:
        for k, inner in v.items():
            bad = _non_finite(inner, depth + 1)
            if bad is not None:
                return f".{k}{bad[0]}", bad[1]
    return None


def _shown(v: float) -> str:
    """A number for a message: a 400-digit integer is not printed whole."""
    text = repr(v)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"


# Sub-agents nest (a sub-agent's own sub-agents); recorded traces go a few levels deep. The
# bound turns a pathological file into an error instead of a RecursionError.
MAX_NESTING = 32


def _num(obj: dict[str, Any], key: str, path: str, where: str, *, required: bool = True,
         integer: bool = False, minimum: float = 0.0, maximum: float = MAX_SECONDS,
         unit: str = "s") -> float:
    """A finite number in [minimum, maximum]: times in seconds unless `unit` says otherwise."""
    if key not in obj:
        if required:
            raise TraceError(path, where, key, "missing", f"add '{key}' (a number >= {minimum:g})")
        return 0.0
    v = obj[key]
    kind = "an integer" if integer else "a number"
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TraceError(path, where, key, f"expected {kind}, got {v!r}", f"make '{key}' {kind}")
    if isinstance(v, float) and not math.isfinite(v):  # a NaN time would stall a lane forever
        raise TraceError(path, where, key, f"{v} is not a finite number",
                         f"give '{key}' as a finite number >= {minimum:g}")
    if integer and v != int(v):
        raise TraceError(path, where, key, f"expected {kind}, got {v!r}", f"make '{key}' {kind}")
    if v < minimum:
        raise TraceError(path, where, key, f"{_shown(v)} is below {minimum:g}",
                         f"'{key}' >= {minimum:g}")
    if v > maximum:
        raise TraceError(path, where, key, f"{_shown(v)} {unit} is above the limit of "
                         f"{maximum:,.0f} {unit}", f"give '{key}' in {unit}, at most "
                         f"{maximum:,.0f} (a larger value is usually a unit mistake)")
    return float(v)


def _prefix_tokens(obj: dict[str, Any], path: str, where: str) -> int:
    """tool_tokens + system_tokens (absent: 0): the first turn's system message."""
    return int(_num(obj, "tool_tokens", path, where, required=False, integer=True,
                    maximum=MAX_TOKENS, unit="tokens")
               + _num(obj, "system_tokens", path, where, required=False, integer=True,
                      maximum=MAX_TOKENS, unit="tokens"))


def _unread_counts(r: dict[str, Any], path: str, where: str) -> None:
    """Fields of AIPerf's schema the replay does not read, held to the same rules: a trace with
    a negative token total or a NaN ttft is broken, whoever reads it next."""
    for key in ("total_tokens", "tool_use_count"):
        _num(r, key, path, where, required=False, integer=True, maximum=math.inf, unit="")
    _num(r, "ttft", path, where, required=False)


def _claim_agent_id(r: dict[str, Any], i: int, path: str, w: str, siblings: dict[str, str],
                    agent_ids: dict[str, str]) -> str:
    """The sub-agent's id, recorded as taken. An id the trace gives is unique in the whole
    trace; one made up here (sub<i>) among its siblings, where the replay looks it up."""
    agent_id = str(r.get("agent_id", f"sub{i}"))
    first = (agent_ids.get(agent_id) if "agent_id" in r else None) or siblings.get(agent_id)
    if first:
        raise TraceError(path, w, "agent_id",
                         f"sub-agent id {agent_id!r} is used twice in one trace (first at "
                         f"{first})", "give every sub-agent of a trace its own agent_id")
    siblings[agent_id] = w
    if "agent_id" in r:
        agent_ids[agent_id] = w
    return agent_id


def _items(raw: Any, path: str, where: str, depth: int = 0,
           strict: bool = False,
           agent_ids: dict[str, str] | None = None) -> list[TraceRequest | SubAgent]:
    """The requests and sub-agents of one list. `agent_ids`: every sub-agent id of the trace so
    far and where it was, so that a second sub-agent under one id is an error: the replay finds
    a sub-agent's requests by its id, and would give the second the first one's."""
    agent_ids = {} if agent_ids is None else agent_ids
    if not isinstance(raw, list):
        raise TraceError(path, where, "requests", f"expected a list, got {type(raw).__name__}",
                         "make 'requests' a list of requests and sub-agents")
    if not raw:
        raise TraceError(path, where, "requests", "empty list",
                         "give at least one request, or drop the trace or sub-agent")
    if depth > MAX_NESTING:
        raise TraceError(path, where, "requests",
                         f"sub-agents nested more than {MAX_NESTING} deep",
                         "flatten the sub-agent nesting (recorded traces go a few levels)")
    out: list[TraceRequest | SubAgent] = []
    siblings: dict[str, str] = {}
    for i, r in enumerate(raw):
        w = f"{where}, requests[{i}]"
        if not isinstance(r, dict):
            raise TraceError(path, w, "requests", "expected an object", "one JSON object per entry")
        kind = r.get("type")
        if kind == "subagent":
            check_fields(r, "sub-agent", path, w, strict)
            agent_id = _claim_agent_id(r, i, path, w, siblings, agent_ids)
            _unread_counts(r, path, w)
            out.append(SubAgent(
                t=_num(r, "t", path, w),
                agent_id=agent_id,
                kind=str(r.get("subagent_type", "")),
                duration=_num(r, "duration_ms", path, w, required=False,
                              maximum=MAX_SECONDS * 1000, unit="ms") / 1000.0,
                items=_items(r.get("requests"), path, f"{w} ({r.get('agent_id', 'subagent')})",
                             depth + 1, strict, agent_ids),
                prefix_tokens=_prefix_tokens(r, path, w),
            ))
            continue
        if kind not in ("n", "s", None):
            raise TraceError(path, w, "type", f"unknown type {kind!r}",
                             "use 'n', 's' or 'subagent'")
        check_fields(r, "request", path, w, strict)
        ids = check_hash_ids(r.get("hash_ids"), path, w, "64-token")
        _unread_counts(r, path, w)
        out.append(TraceRequest(
            t=_num(r, "t", path, w),
            in_tokens=int(_num(r, "in", path, w, integer=True, minimum=1, maximum=MAX_TOKENS,
                               unit="tokens")),
            out_tokens=int(_num(r, "out", path, w, integer=True, minimum=1, maximum=MAX_TOKENS,
                                unit="tokens")),
            hash_ids=ids,
            think=_num(r, "think_time", path, w, required=False),
            api_time=_num(r, "api_time", path, w, required=False),
        ))
    return out


def parse_trace(obj: Any, path: str, where: str, strict: bool = False) -> Trace:
    """One trace; every entry's fields checked against its kind (`check_fields`)."""
    if not isinstance(obj, dict):
        raise TraceError(path, where, "(trace)", "expected a JSON object per trace",
                         "one trace object per file or per line")
    tid = str(obj.get("id", where))
    w = f"{where}, trace {tid}"
    check_fields(obj, "trace", path, w, strict)
    bs = _num(obj, "block_size", path, w, integer=True, minimum=1, maximum=MAX_TOKENS,
              unit="tokens")
    items = _items(obj.get("requests"), path, w, strict=strict)
    if not any(isinstance(i, TraceRequest) for i in items):
        # the replay starts a lane on a parent turn and attaches sub-agents to parent turns
        raise TraceError(path, w, "requests", "only sub-agents, no parent turn",
                         "give the trace at least one top-level request (type 'n' or 's')")
    return Trace(
        id=tid, source=path, block_size=int(bs),
        items=items,
        shared_scope=obj.get("hash_id_scope", "local") == "global",
        meta={k: obj[k] for k in ("models", "hash_id_scope") if k in obj},
        prefix_tokens=_prefix_tokens(obj, path, w),
    )


def _loads(text: str, path: Path, where: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise TraceError(str(path), where, "(json)", "nested too deeply to parse",
                         f"keep sub-agent nesting within {MAX_NESTING} levels") from None


def load(path: Path) -> list[Trace]:
    text = read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return [parse_trace(_loads(text, path, "whole file"), str(path), "whole file")]
        except json.JSONDecodeError:
            pass  # maybe JSONL with one trace per line
    traces = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = _loads(line, path, f"line {n}")
        except json.JSONDecodeError as e:
            raise TraceError(str(path), f"line {n}", "(json)", f"not valid JSON ({e.msg})",
                             "one complete JSON trace object per line") from None
        traces.append(parse_trace(obj, str(path), f"line {n}"))
    if not traces:
        raise TraceError(str(path), "whole file", "(trace)", "no traces found",
                         "give one trace object per file or per line")
    return traces
