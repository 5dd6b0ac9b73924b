"""Server-sent-event accounting for OpenAI-compatible streams, cheap enough for ~1M events/s.

The client feeds every socket read to a `StreamAccumulator` with its arrival time. The hot path
does no per-event Python work: it counts event terminators (`\\n\\n`) in the read (numpy for big
reads), so each complete event inherits the timestamp of the read that completed it. Only the
head of the stream (until the first content-bearing event) and its tail (the last content
event, the finish/usage events and `[DONE]`) are JSON-parsed, each scanned only as far as it
must be; every event between the first and the last content event is a content chunk
(OpenAI-compatible servers emit nothing else there).

The events in between are checked for framing at O(1) cost per read: the event a read begins
with must start `d`(ata) and the last event it completes must end `}`. Engines write one event
per stream per step, so with reads of one event (a client keeping up) that is every event; in
a read of many, its first and last. Only pending reads holding a flagged event are parsed, event
by event: a comment or keep-alive is no chunk, and a malformed event (not JSON, truncated,
invalid UTF-8, empty, not an object) is no chunk and fails the request with "malformed SSE
event at chunk N: ...", exactly as `strict=True` reports it. A read of several events is also
checked as a whole, at one more C-speed count: all its events must end `}` (or `]`, for
[DONE]), so a malformed event inside it is seen too. What the fast path does not see between
the first and the last content event: an event framed `data: {...}` whose JSON or shape is
wrong (a server with a shape bug sends it in the head or tail too, where both paths parse), and
a server error event. `strict=True` sees all of them.

`strict=True` parses every event instead (slower; used to cross-check the fast path and when a
server's per-chunk token ids are wanted).

Nothing here raises on what a server sends: every event becomes a chunk, a non-chunk (comment,
role-only, usage) or a reasoned failure in the record's `error`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.client.read_state import FeedState
from harness.client.sse_events import MALFORMED, ParsedEvent, parse_event
from harness.records import RequestRecord

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "MALFORMED", "ParsedEvent", "StreamAccumulator",
           "parse_event"]

_SEP = b"\n\n"
_NUMPY_MIN_BYTES = 4096  # below this, bytes.count beats numpy's call overhead
_TAIL_BYTES = 16384  # enough for the last content event, finish, usage, timings and [DONE]
assert (_NUMPY_MIN_BYTES, 2 * _TAIL_BYTES) == (4096, 32768), "StreamAccumulator.feed inlines them"
# One event larger than this fails the request: nothing a server streams legitimately comes
# close (a content chunk is ~200 bytes), and without a bound one endless event holds memory.
DEFAULT_MAX_EVENT_BYTES = 4 << 20


def _scan_numpy(buf: bytes) -> tuple[int, int]:
    """(event terminators, terminators right after a `}` or `]`) in a large read: one pass of
    vector ops (~6 us for 38 kB here) where two bytes.count of 3-byte needles took ~90 us."""
    a = np.frombuffer(buf, dtype=np.uint8)
    nl = a == 10
    ends = nl[1:] & nl[:-1]
    n = int(np.count_nonzero(ends))
    if n < 2:  # the closing check is for reads of several events only
        return n, n
    before = a[:-2]
    return n, int(np.count_nonzero(ends[1:] & ((before == 125) | (before == 93))))


@dataclass(slots=True)
class StreamAccumulator(FeedState):
    """Collects one response stream; `finish` writes what it learnt into a RequestRecord.

    After a `feed`, a non-empty `failure` means the stream is beyond use (an oversized event):
    stop reading it.

    `read_ts` (one stamp per read), `_pend`, `_pend_len` and `_steady` are FeedState's
    (harness.client.read_state): the compiled steady read of the httptools transport updates
    them as `feed`'s first branch does.
    """

    strict: bool = False
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    # Events completed per read, kept only where a read's count is not 1 (read index, count):
    # at one event per write nearly every read completes one, and a per-read list of 1s was a
    # second append and an int per read on the hot path (docs/client.md, "Two smaller
    # read-path changes").
    _counts: list[tuple[int, int]] = field(default_factory=list)
    _extra: int = 0  # events beyond one per read, summed over `_counts`
    failure: str = ""
    _prev_nl: bool = False
    _open: int = 0  # strict mode: bytes of the event still open (since the last terminator)
    # head: unparsed bytes until the first content event has been seen
    _head: bytearray = field(default_factory=bytearray)
    _head_next: int = 0  # index of the next event the head parses
    _head_done: bool = False
    _first_content: int = -1
    # Events parsed anywhere in fast mode, (index, event); the head's, then slow-path regions'.
    _seen: list[tuple[int, ParsedEvent]] = field(default_factory=list)
    # Reads after the head that are not yet checked (FeedState's `_pend`) begin at an event
    # boundary; this is the index of the first event in them.
    _pend_first: int = 0
    _skip: list[int] = field(default_factory=list)  # events after the head that are no chunks
    _suspects: list[tuple[int, int]] = field(default_factory=list)  # event ranges to parse
    # strict mode keeps every read
    _all: list[bytes] = field(default_factory=list)

    def feed(self, buf: bytes, t: float) -> None:
        # The usual read at one event per write: one whole event `d...}\n\n`, its first "\n"
        # the terminator's (a one-byte find is a memchr, a third of the two-byte count's cost),
        # after a read that ended "\n", past the head. Every framing check below passes for
        # it, so it leaves the state the general path would, without its branches.
        # (Subscripts, not startswith/endswith: a bytes method call builds an argument tuple.)
        if (self._steady and buf.find(b"\n") == len(buf) - 2 and buf[-1] == 10
                and buf[0] == 100 and buf[-3] == 125):
            self.read_ts.append(t)
            self._pend.append(buf)
            self._pend_len += len(buf)
            if self._pend_len > 32768:  # 2 * _TAIL_BYTES; an event completed: trim
                self._trim()
            return
        ne = len(self.read_ts) + self._extra  # events before this read
        # Literals, not the module's names: a global lookup per read is measurable here.
        if len(buf) < 4096:  # _NUMPY_MIN_BYTES
            n, closed = buf.count(b"\n\n"), -1
        else:
            n, closed = _scan_numpy(buf)
        # Framing, O(1) per read: the event a read begins with starts "d"ata, the last one it
        # ends ends "}" (with one event per read, as engines write, that is every event).
        if self._prev_nl:
            first = buf[0]
            if first == 10:  # a "\n" + "\n" split across two reads
                n += 1
            elif first != 100:
                self._suspects.append((ne, ne))
        self._prev_nl = last_nl = buf[-1] == 10
        self.read_ts.append(t)
        if n != 1:
            self._counts.append((len(self.read_ts) - 1, n))
            self._extra += n - 1
        ne += n  # events after this read
        if last_nl:
            try:  # no length check: IndexError only for reads of under 3 bytes
                if buf[-3] != 125 and buf[-2] != 125:  # ..."}\n\n" or ..."}\n"
                    self._suspects.append((ne - 1, ne))
            except IndexError:
                pass
        # A read of several events: every one of them must end "}" (or "]" for [DONE]); one
        # C-speed count per read, so a malformed event inside it is noticed as well.
        if n > 1:
            if closed < 0:
                closed = buf.count(b"}\n\n") + buf.count(b"]\n\n")
            if closed < n:
                self._suspects.append((ne - n, ne))
        if self.strict:
            self._feed_strict(buf, n)
            return
        if not self._head_done:
            self._feed_head(buf, n)
            self._steady = last_nl and self._head_done
        else:
            self._steady = last_nl
            self._pend.append(buf)
            self._pend_len += len(buf)
            if self._pend_len > 32768:  # 2 * _TAIL_BYTES
                # Amortised: trim when twice the tail is held, and only once an event
                # completed (one huge event is joined once, not once per read).
                if n:
                    self._trim()
                elif self._pend_len > self.max_event_bytes + 2 * _TAIL_BYTES:
                    self._oversized()  # the open event holds nearly all of it

    @property
    def n_events(self) -> int:
        """Events completed so far, over every read."""
        return len(self.read_ts) + self._extra

    def _feed_strict(self, buf: bytes, n: int) -> None:
        self._all.append(buf)
        self._open = 0 if n else self._open + len(buf)  # give or take the next event's start
        if self._open > self.max_event_bytes:
            self._oversized()

    def _oversized(self) -> None:
        if not self.failure:
            self.failure = (f"SSE event larger than {self.max_event_bytes} bytes (the client's "
                            f"max_event_bytes) at chunk {self.n_events}; stopped reading")

    def _feed_head(self, buf: bytes, n: int) -> None:
        """Parse complete events from where the last read stopped, up to the first content.

        The read is searched in place: only an event left unfinished across reads is copied
        (into `_head`), so a first read holding a whole reply costs a few finds, not copies."""
        head = self._head
        if head or not n:
            head += buf
            if not n:  # no event completed: nothing new to parse
                if len(head) > self.max_event_bytes:
                    self._oversized()
                return
            data: bytes | bytearray = head
        else:
            data = buf
        pos = 0
        while not self._head_done:
            j = data.find(_SEP, pos)
            if j < 0:
                break
            idx = self._head_next
            self._head_next += 1
            ev = parse_event(bytes(data[pos:j]))
            pos = j + 2
            if ev is not None:
                self._seen.append((idx, ev))
                if ev.content or ev.done:
                    self._head_done = True
                    self._first_content = idx if ev.content else -1
        if self._head_done:
            rest = bytes(data[pos:]) if pos else bytes(data)
            self._head = bytearray()
            self._pend = [rest] if rest else []
            self._pend_len = len(rest)
            self._pend_first = self._head_next
            if rest and not rest.startswith(b"data:"):
                self._suspects.append((self._pend_first, self._pend_first))
        elif data is head:
            del head[:pos]  # keep only the unfinished event
        else:
            head += buf[pos:]

    def _trim(self) -> None:
        """Drop the oldest pending reads, keeping at least _TAIL_BYTES of the newest; the
        dropped events are parsed only where a framing check flagged them."""
        pend = self._pend
        keep, size = len(pend), 0
        while keep > 0 and size < _TAIL_BYTES:
            keep -= 1
            size += len(pend[keep])
        if keep == 0:
            return
        # Events completed in the kept reads: one each, and the newest reads' other counts
        # (pend[keep:] are reads; pend[0], which may be a carry, is never kept).
        first_kept = len(self.read_ts) - (len(pend) - keep)
        kept_events = len(pend) - keep
        for i, c in reversed(self._counts):
            if i < first_kept:
                break
            kept_events += c - 1
        k = self.n_events - self._pend_first - kept_events
        last = pend[keep - 1]
        j = last.rfind(_SEP)
        if j >= 0 and not self._flagged(k):  # the usual case: nothing to parse, no join
            carry = last[j + 2:]
            self._pend_first += k
            del pend[:keep]
            if self._suspects:  # flags of events already behind us
                self._suspects = [x for x in self._suspects if x[1] >= self._pend_first]
        else:
            region = pend[0] if keep == 1 else b"".join(pend[:keep])
            del pend[:keep]
            stop = region.rfind(_SEP) + 2 if k else 0
            self._check(region, stop, k)
            carry = region[stop:]
        if carry:  # the unfinished event: checked with the reads that finish it
            pend.insert(0, carry)
        self._pend_len = size + len(carry)

    def _flagged(self, k: int) -> bool:
        """Whether a framing check flagged one of the next k events."""
        lo, hi = self._pend_first, self._pend_first + k - 1
        return any(a <= hi and b >= lo for a, b in self._suspects)

    def _check(self, buf: bytes, stop: int, k: int) -> None:
        """Account for the k complete events in buf[:stop], the first being `_pend_first`:
        parse them only when a framing check flagged one of them."""
        lo, hi = self._pend_first, self._pend_first + k - 1
        flagged = k > 0 and self._flagged(k)
        self._pend_first += k
        if not flagged:
            return
        self._suspects = [s for s in self._suspects if s[1] > hi]
        for idx, raw in enumerate(buf[:stop - 2].split(_SEP)[:k], lo):
            ev = parse_event(raw)
            if ev is None or not ev.content:  # comments, malformed and role-only: no chunks
                self._skip.append(idx)
            if ev is not None and (ev.malformed or ev.error or ev.done or ev.has_usage
                                   or ev.finish_reason):
                self._seen.append((idx, ev))

    def _event_times(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Each event's stamp (its read's), for events lo..hi-1 (all by default)."""
        ts = self.read_ts
        end = self.n_events if hi is None else hi
        # Before the first read whose count is not 1, event i is read i. That is the whole
        # range at one event per write, where the count list holds only the reply's last read
        # (usage and [DONE] together): the slice alone is converted, with no repeat (a
        # request's finish was ~85 us, most of it here, on a path run once per request).
        if not self._counts or end <= self._counts[0][0]:
            return np.fromiter(ts[lo:end], float, max(end - lo, 0))
        if len(self._counts) > 64:  # many reads of several events (48 a write): vectorised
            counts = np.ones(len(ts), dtype=np.int64)
            pairs = np.asarray(self._counts, dtype=np.int64)
            counts[pairs[:, 0]] = pairs[:, 1]
            return np.repeat(np.asarray(ts, dtype=float), counts)[lo:end]
        # A few (a reply's last read; reads a lagging client took two chunks at a time):
        # list slices, then one conversion, where numpy's ones, fancy index and repeat cost
        # more than the conversion itself.
        times: list[float] = []
        at = 0
        for i, c in self._counts:
            times += ts[at:i]
            times += [ts[i]] * c
            at = i + 1
        times += ts[at:]
        return np.fromiter(times[lo:end], float, max(end - lo, 0))

    def finish(self, rec: RequestRecord, end_ts: float) -> None:
        rec.end_ts = end_ts
        if self.strict:
            self._finish_strict(rec)
        elif not self._head_done:  # the head parsed every event: there was no content
            self._summarise(rec, self._seen)
        else:
            self._finish_fast(rec)

    def _finish_fast(self, rec: RequestRecord) -> None:
        region = b"".join(self._pend)
        hi = region.rfind(_SEP)  # the end of the stream's last complete event
        idx = self.n_events - 1
        tail: list[tuple[int, ParsedEvent]] = []
        last_content, start = -1, 0
        # Walk back from the end to the last content event, parsing only what lies after it.
        while hi >= 0:
            lo = region.rfind(_SEP, 0, hi)
            start = lo + 2 if lo >= 0 else 0
            ev = parse_event(region[start:hi])
            if ev is not None and ev.content:
                last_content = idx
                break
            if ev is not None:
                tail.append((idx, ev))
            idx -= 1
            hi, start = lo, 0
        self._check(region, start, idx - self._pend_first if last_content >= 0 else 0)
        if last_content < 0:
            last_content = self._pend_first - 1  # the last event before the pending reads
        self._summarise(rec, self._seen + tail[::-1])
        first = self._first_content
        if first < 0 or last_content < first:
            return
        times = self._event_times(first, last_content + 1)
        skip = [i - first for i in self._skip if first <= i <= last_content]
        rec.chunk_ts = np.delete(times, skip) if skip else times
        rec.chunk_tokens = []  # the server did not say how many tokens each chunk held
        rec.chunk_tokens_exact = False
        if len(rec.chunk_ts):
            rec.first_token_ts = float(rec.chunk_ts[0])
            rec.last_token_ts = float(rec.chunk_ts[-1])

    def _finish_strict(self, rec: RequestRecord) -> None:
        raws = b"".join(self._all).split(_SEP)[: self.n_events]
        events = [(i, ev) for i, raw in enumerate(raws) if (ev := parse_event(raw)) is not None]
        self._summarise(rec, events)
        idx = [i for i, e in events if e.content]
        if not idx:
            return
        rec.chunk_ts = self._event_times()[idx]
        tokens = [e.tokens for _, e in events if e.content]
        rec.chunk_tokens_exact = all(t > 0 for t in tokens)
        rec.chunk_tokens = tokens if rec.chunk_tokens_exact else []
        rec.first_token_ts = float(rec.chunk_ts[0])
        rec.last_token_ts = float(rec.chunk_ts[-1])

    def _summarise(self, rec: RequestRecord, events: list[tuple[int, ParsedEvent]]) -> None:
        """Usage, finish reason and the request's error from the parsed events (in order)."""
        done = False
        malformed = server_error = ""
        for idx, ev in sorted(events, key=lambda p: p[0]):
            done = done or ev.done
            if ev.malformed and not malformed:
                malformed = f"{MALFORMED} {idx}: {ev.malformed}"
            if ev.error and not server_error:
                server_error = ev.error
            if ev.finish_reason:
                rec.finish_reason = ev.finish_reason
            if ev.has_usage:
                rec.prompt_tokens = ev.prompt_tokens
                rec.completion_tokens = ev.completion_tokens
                if ev.cached_tokens >= 0:
                    rec.cached_tokens = ev.cached_tokens
            if ev.draft_tokens >= 0:
                rec.spec_draft_tokens = ev.draft_tokens
                rec.spec_accepted_tokens = ev.draft_accepted
        rec.truncated = not done
        if self.failure or malformed or server_error:
            rec.error = rec.error or self.failure or malformed or server_error
        elif not self.read_ts:
            rec.error = rec.error or "HTTP 200 with an empty body (no SSE events, no [DONE])"
        elif rec.truncated:
            rec.error = rec.error or "stream ended without [DONE]"
