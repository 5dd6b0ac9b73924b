"""One server-sent event classified: a content chunk, a non-chunk (comment, role-only,
usage, finish, [DONE]) or a reasoned failure (`malformed`, the server's own `error`).

`harness.client.sse.StreamAccumulator` calls `parse_event` only on the events it must look at (the
head and tail of a stream, and events a framing check flagged). Nothing here raises on what a
server sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

MALFORMED = "malformed SSE event at chunk"


def _payload(event: bytes) -> bytes | None:
    """The data of one SSE event (data lines joined), or None for comment/empty events."""
    if event.startswith(b"data:") and b"\n" not in event:
        return event[5:].lstrip(b" ")
    lines = [ln[5:].lstrip(b" ") for ln in event.split(b"\n") if ln.startswith(b"data:")]
    return b"\n".join(lines) if lines else None



@dataclass(slots=True)
class ParsedEvent:
    done: bool = False
    content: bool = False
    tokens: int = 0  # from token ids when the server sends them, else 0 (unknown)
    has_usage: bool = False
    prompt_tokens: int = -1
    completion_tokens: int = -1
    cached_tokens: int = -1
    # llama.cpp's per-request `timings` (draft tokens proposed and accepted for this request;
    # ggml-org/llama.cpp:tools/server/server-task.cpp, result_timings::to_json): -1 if absent
    draft_tokens: int = -1
    draft_accepted: int = -1
    finish_reason: str = ""
    error: str = ""  # the server's own error event
    malformed: str = ""  # why this event is not what an OpenAI-compatible server sends


def _snippet(data: bytes) -> str:
    return repr(data[:120]) + ("..." if len(data) > 120 else "")


def _kind(v: Any) -> str:
    return "null" if v is None else f"{type(v).__name__} {str(v)[:40]!r}"


def _count(obj: dict[str, Any], key: str, where: str) -> tuple[int, str]:
    """A token count: (value, "") or (-1, why it is unusable); absent is (-1, "")."""
    if key not in obj:
        return -1, ""
    v = obj[key]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v, ""
    return -1, f"{where}.{key} is {_kind(v)}, expected a non-negative integer"


def _read_usage(ev: ParsedEvent, usage: Any) -> str:
    if not isinstance(usage, dict):
        return f"usage is {_kind(usage)}, expected an object"
    ev.has_usage = True
    ev.prompt_tokens, bad = _count(usage, "prompt_tokens", "usage")
    if bad:
        return bad
    ev.prompt_tokens = ev.prompt_tokens or -1  # 0 prompt tokens: the server did not count
    ev.completion_tokens, bad = _count(usage, "completion_tokens", "usage")
    if bad:
        return bad
    details = usage.get("prompt_tokens_details")
    if details is None:
        return ""
    if not isinstance(details, dict):
        return f"usage.prompt_tokens_details is {_kind(details)}, expected an object"
    if details.get("cached_tokens") is None:  # servers without a prefix cache say null
        return ""
    ev.cached_tokens, bad = _count(details, "cached_tokens", "usage.prompt_tokens_details")
    return bad


def _read_timings(ev: ParsedEvent, timings: dict[str, Any]) -> None:
    """Per-request draft counts where the server reports them (llama.cpp adds `draft_n` and
    `draft_n_accepted` when the request drafted). Optional: a bad value is ignored, never a
    failure - they describe the engine, not the reply."""
    drafted, _ = _count(timings, "draft_n", "timings")
    accepted, _ = _count(timings, "draft_n_accepted", "timings")
    if drafted >= 0 and 0 <= accepted <= drafted:
        ev.draft_tokens, ev.draft_accepted = drafted, accepted


def _read_choices(ev: ParsedEvent, choices: Any) -> str:
    if choices is None:  # usage-only and error events carry none, or null
        return ""
    if not isinstance(choices, list):
        return f"choices is {_kind(choices)}, expected a list"
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            return f"choices[{i}] is {_kind(choice)}, expected an object"
        if choice.get("finish_reason"):
            ev.finish_reason = str(choice["finish_reason"])[:100]
        delta = choice.get("delta")
        if delta is not None and not isinstance(delta, dict):
            return f"choices[{i}].delta is {_kind(delta)}, expected an object"
        src = delta if delta is not None else choice
        if (
            src.get("text")
            or src.get("content")
            or src.get("reasoning_content")
            or src.get("reasoning")
            or src.get("tool_calls")
        ):
            ev.content = True
        ids = choice.get("token_ids") or src.get("token_ids")
        if isinstance(ids, list):
            ev.tokens += len(ids)
    return ""


def _parse(event: bytes) -> ParsedEvent | None:
    data = _payload(event.strip(b"\r\n"))
    if data is None:
        return None
    if data == b"[DONE]":
        return ParsedEvent(done=True)
    if not data.strip():
        return ParsedEvent(malformed="empty data")
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return ParsedEvent(malformed=f"not JSON ({exc}): {_snippet(data)}")
    if not isinstance(obj, dict):
        return ParsedEvent(malformed=f"JSON {type(obj).__name__}, expected an object: "
                                     f"{_snippet(data)}")
    ev = ParsedEvent()
    err = obj.get("error")
    if err:
        ev.error = str(err.get("message", err) if isinstance(err, dict) else err)[:500]
        ev.error = ev.error or "error event without a message"
    timings = obj.get("timings")
    if isinstance(timings, dict):
        _read_timings(ev, timings)
    usage = obj.get("usage")
    ev.malformed = (_read_usage(ev, usage) if usage is not None else "") or _read_choices(
        ev, obj.get("choices"))
    if ev.malformed:
        ev.content = False  # a malformed event is never a chunk, in either path
    return ev


def parse_event(event: bytes) -> ParsedEvent | None:
    """Classify one raw SSE event. None when it carries no data (a comment or keep-alive).

    Never raises: whatever a server sends becomes an event, possibly with `malformed` set.
    """
    try:
        return _parse(event)
    except Exception as exc:  # a shape nobody foresaw must still become a reasoned failure
        return ParsedEvent(malformed=f"unreadable event ({type(exc).__name__}: {exc})"[:300])
