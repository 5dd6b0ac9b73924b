"""Server-sent-event accounting for OpenAI-compatible streams, cheap enough for ~1M events/s.

The client feeds every socket read to a `StreamAccumulator` with its arrival time. The hot path
does no per-event Python work: it counts event terminators (`\\n\\n`) in the read (numpy for big
reads), so each complete event inherits the timestamp of the read that completed it. Only the
head of the stream (until the first content-bearing event) and its tail (the last content
event, the finish/usage events and `[DONE]`) are JSON-parsed; every event between the first and
the last content event is a content chunk (OpenAI-compatible servers emit nothing else there).

`strict=True` parses every event instead (slower; used to cross-check the fast path and when a
server's per-chunk token ids are wanted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from harness.records import RequestRecord

_SEP = b"\n\n"
_NUMPY_MIN_BYTES = 4096  # below this, bytes.count beats numpy's call overhead
_TAIL_BYTES = 16384  # enough for the last content event, finish, usage, timings and [DONE]
_HEAD_MAX_BYTES = 1 << 20


def _count_terminators(buf: bytes) -> int:
    if len(buf) < _NUMPY_MIN_BYTES:
        return buf.count(_SEP)
    nl = np.frombuffer(buf, dtype=np.uint8) == 10
    return int(np.count_nonzero(nl[1:] & nl[:-1]))


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
    usage: dict[str, Any] | None = None
    finish_reason: str = ""
    error: str = ""


def parse_event(event: bytes) -> ParsedEvent | None:
    """Classify one raw SSE event. None when it carries no data (a comment or keep-alive)."""
    data = _payload(event.strip(b"\r\n"))
    if data is None:
        return None
    if data == b"[DONE]":
        return ParsedEvent(done=True)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return ParsedEvent(error=f"unparseable event: {data[:200]!r}")
    if not isinstance(obj, dict):
        return ParsedEvent(error=f"unexpected event: {data[:200]!r}")
    ev = ParsedEvent()
    if obj.get("error"):
        err = obj["error"]
        ev.error = str(err.get("message", err) if isinstance(err, dict) else err)[:500]
    usage = obj.get("usage")
    if isinstance(usage, dict):
        ev.usage = usage
    for choice in obj.get("choices") or ():
        if choice.get("finish_reason"):
            ev.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        src = delta if isinstance(delta, dict) else choice
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
    return ev


@dataclass(slots=True)
class StreamAccumulator:
    """Collects one response stream; `finish` writes what it learnt into a RequestRecord."""

    strict: bool = False
    read_ts: list[float] = field(default_factory=list)
    read_events: list[int] = field(default_factory=list)
    n_events: int = 0
    _prev_nl: bool = False
    # head: raw bytes until the first content event has been seen
    _head: bytearray = field(default_factory=bytearray)
    _head_events: list[ParsedEvent | None] = field(default_factory=list)
    _head_done: bool = False
    _first_content: int = -1
    # tail: the most recent reads, at least _TAIL_BYTES of them
    _tail: list[bytes] = field(default_factory=list)
    _tail_len: int = 0
    _tail_dropped: bool = False
    # strict mode keeps every read
    _all: list[bytes] = field(default_factory=list)

    def feed(self, buf: bytes, t: float) -> None:
        n = _count_terminators(buf)
        if self._prev_nl and buf[0] == 10:  # a "\n" + "\n" split across two reads
            n += 1
        self._prev_nl = buf[-1] == 10
        self.read_ts.append(t)
        self.read_events.append(n)
        self.n_events += n
        if self.strict:
            self._all.append(buf)
            return
        if not self._head_done:
            self._feed_head(buf)
        self._tail.append(buf)
        self._tail_len += len(buf)
        if self._tail_len > 2 * _TAIL_BYTES:  # amortised: trim only when twice too long
            self._trim_tail()

    def _trim_tail(self) -> None:
        tail = self._tail
        keep, size = len(tail), 0
        while keep > 0 and size < _TAIL_BYTES:
            keep -= 1
            size += len(tail[keep])
        if keep > 0:
            del tail[:keep]
            self._tail_len = size
            self._tail_dropped = True

    def _feed_head(self, buf: bytes) -> None:
        self._head += buf
        parts = bytes(self._head).split(_SEP)
        complete = parts[:-1]
        for raw in complete[len(self._head_events) :]:
            ev = parse_event(raw)
            self._head_events.append(ev)
            if ev is not None and (ev.content or ev.done or ev.error):
                self._first_content = len(self._head_events) - 1 if ev.content else -1
                self._head_done = True
                break
        if len(self._head) > _HEAD_MAX_BYTES:
            self._head_done = True

    def _event_times(self) -> np.ndarray:
        return np.repeat(np.asarray(self.read_ts, dtype=float), self.read_events)

    def finish(self, rec: RequestRecord, end_ts: float) -> None:
        rec.end_ts = end_ts
        if self.strict:
            events = [parse_event(e) for e in b"".join(self._all).split(_SEP)[: self.n_events]]
            self._apply(rec, events)
            return
        # Tail events, newest last. The piece after the last terminator is an unterminated
        # remainder; when older reads were dropped the first piece may be partial too.
        tail_raw = b"".join(self._tail).split(_SEP)[:-1]
        if self._tail_dropped:
            tail_raw = tail_raw[1:]
        tail_raw = tail_raw[len(tail_raw) - min(len(tail_raw), self.n_events) :]
        tail_start = self.n_events - len(tail_raw)
        # Walk back from the end to the last content event; older events are content chunks.
        tail_events: list[ParsedEvent | None] = [None] * len(tail_raw)
        last_content = -1
        for i in range(len(tail_raw) - 1, -1, -1):
            ev = parse_event(tail_raw[i])
            tail_events[i] = ev
            if ev is not None and ev.content:
                last_content = tail_start + i
                break
        if last_content < 0 and tail_start > 0:
            last_content = tail_start - 1  # no content in the tail window: it ends before it
        self._apply_fast(rec, tail_events, tail_start, last_content)

    def _apply_fast(
        self,
        rec: RequestRecord,
        tail_events: list[ParsedEvent | None],
        tail_start: int,
        last_content: int,
    ) -> None:
        first = self._first_content
        seen: list[ParsedEvent] = [e for e in self._head_events if e is not None]
        seen += [e for e in tail_events if e is not None]
        self._summarise(rec, seen)
        if first < 0 or last_content < first:
            return
        times = self._event_times()
        rec.chunk_ts = times[first : last_content + 1]
        rec.chunk_tokens = []  # the server did not say how many tokens each chunk held
        rec.chunk_tokens_exact = False
        rec.first_token_ts = float(rec.chunk_ts[0])
        rec.last_token_ts = float(rec.chunk_ts[-1])

    def _apply(self, rec: RequestRecord, events: list[ParsedEvent | None]) -> None:
        times = self._event_times()
        seen = [e for e in events if e is not None]
        self._summarise(rec, seen)
        idx = [i for i, e in enumerate(events) if e is not None and e.content]
        if not idx:
            return
        rec.chunk_ts = times[idx]
        tokens = [events[i].tokens for i in idx]  # type: ignore[union-attr]
        rec.chunk_tokens_exact = all(t > 0 for t in tokens)
        rec.chunk_tokens = tokens if rec.chunk_tokens_exact else []
        rec.first_token_ts = float(rec.chunk_ts[0])
        rec.last_token_ts = float(rec.chunk_ts[-1])

    @staticmethod
    def _summarise(rec: RequestRecord, events: list[ParsedEvent]) -> None:
        done = False
        for ev in events:
            done = done or ev.done
            if ev.error and not rec.error:
                rec.error = ev.error
            if ev.finish_reason:
                rec.finish_reason = ev.finish_reason
            if ev.usage:
                rec.prompt_tokens = int(ev.usage.get("prompt_tokens", -1) or -1)
                rec.completion_tokens = int(ev.usage.get("completion_tokens", -1))
                details = ev.usage.get("prompt_tokens_details") or {}
                cached = details.get("cached_tokens") if isinstance(details, dict) else None
                if cached is not None:
                    rec.cached_tokens = int(cached)
        rec.truncated = not done
        if rec.truncated and not rec.error:
            rec.error = "stream ended without [DONE]"

