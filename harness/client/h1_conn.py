"""One HTTP/1.1 connection of the httptools transport, read by an `asyncio.Protocol` of ours
and parsed by llhttp (httptools): the reply's head, its body handed to the request's
`sse.StreamAccumulator` with each read's stamp, and the ways a connection fails, worded as
aiohttp words them. `_Conn` reads through the compiled steady read where
harness.client._fastread is built, `_PyConn` in Python (`client.read_path`). The exchange over
these connections and their keep-alive reuse are harness.client.h1_stream's; why the transport
reads this way: its docstring and docs/client.md "Transports"."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
import httptools
from yarl import URL

from harness.client.loop_passes import PASSES
from harness.client.read_state import ConnState, PyConnState
from harness.client.refusal import ERROR_BODY_BYTES, needs_body
from harness.client.sse import StreamAccumulator

_pass_read = PASSES.read  # the process's one meter: bound once, called on every read
_clock = time.perf_counter


class Stalled(Exception):
    """No byte for client.stall_timeout_s."""


@dataclass(slots=True)
class Reply:
    """What the caller needs of a reply's head, and its error body when not streamed."""

    status: int = 0
    location: str = ""
    encoding: str = ""
    content_type: str = ""
    body: bytes = b""


class _ConnBody:
    """One keep-alive connection; one request at a time (the methods of _Conn and _PyConn).

    `_feed`, `_acc`, `_raw`, `last`, `_any`, `_boundary` and `_chunk_cb` are the connection
    state's (harness.client.read_state). Compiled (`_Conn`), its `data_received` stamps each
    read, counts it into the pass meter and takes a steady read (one whole chunk of one whole
    event, llhttp between chunks) itself; any other read comes to `_read` with its stamp. In
    `_PyConn` (`client.read_path=python`, or no compiled module) `_read` is `data_received`."""

    __slots__ = ()
    # Slots: every read touches this object, and 64-256 of them are read in turn; its fields
    # then sit in the object itself, not in a separate values array.
    SLOTS = ("_bodies", "_chunked", "_close_delimited", "_err", "_has_length", "_keep_alive",
             "_parser", "closed", "complete", "end", "head", "on_body", "reply", "transport")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser: httptools.HttpResponseParser | None = None
        self._meter = PASSES
        # llhttp's on_body is this list's append, a C call: a read's body slices (chunk framing
        # removed) wait here until _read hands them on with the read's stamp. A Python
        # on_body cost a call from C into Python on every read (~150 ns in isolation).
        self._bodies: list[bytes] = []
        self.on_body = self._bodies.append
        self._err: bytearray | None = None  # a refused reply's body, up to ERROR_BODY_BYTES
        self.reply = Reply()
        self._close_delimited = False  # neither chunked nor Content-Length: ends at EOF
        self._chunked = False
        self._has_length = False
        self._keep_alive = False  # what the reply's head allowed, read before llhttp resets
        self.complete = False
        self.head: asyncio.Future[None] | None = None
        self.end: asyncio.Future[None] | None = None

    # ---- the socket ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def _read(self, data: bytes, t: float | None = None) -> None:
        """A read the compiled path did not take (stamped there), or any read (stamped
        here)."""
        if t is None:
            t = self.last = _clock()
            _pass_read(t)
        feed = self._feed
        if feed is None:  # bytes on an idle connection: nobody's reply; the connection is unsafe
            self._drop()
            return
        self._any = True
        bodies = self._bodies
        self._chunk_cb = 0
        try:
            feed(data)  # llhttp appends the read's body slices to `bodies` (on_body, in C)
        except httptools.HttpParserError as exc:
            if bodies:
                self._take(bodies, t)  # what came before the fault, as it came
            self._fail(aiohttp.ClientResponseError(
                aiohttp.RequestInfo(URL(), "POST", {}), (), status=self.reply.status,  # type: ignore[arg-type]
                message=f"invalid HTTP reply: {exc}"))
            return
        except Exception as exc:  # httptools' HttpParserUpgrade (no HttpParserError), or ours
            bodies.clear()
            self._accounting_failed(exc)
            return
        # llhttp is between chunks when its last chunk callback in this read was a chunk's
        # completion and the read ended with that chunk's CRLF (what followed the callback
        # could only be an unfinished size line, and one ending CRLF is finished): the next
        # read, if one whole chunk, may skip llhttp (the compiled path; _fastread.c's header).
        self._boundary = (self._chunk_cb == 2 and self._feed is not None
                          and data[-2:] == b"\r\n")
        if bodies:
            acc = self._acc
            if acc is not None and len(bodies) == 1 and self._raw is None:
                # The usual read at one event per write: one slice, straight to the accumulator.
                try:
                    acc.feed(bodies.pop(), t)
                except Exception as exc:
                    self._accounting_failed(exc)
                    return
                if acc.failure:  # given up: stop reading this reply
                    self._abandon()
            else:
                self._take(bodies, t)

    def _take(self, bodies: list[bytes], t: float) -> None:
        """One read's body slices, in order, to the accumulator or to the error body."""
        try:
            for body in bodies:
                acc = self._acc
                if acc is not None:
                    acc.feed(body, t)
                    if self._raw is not None:
                        self._raw((t, body))
                    if acc.failure:  # given up: _abandon detaches it; the rest is dropped
                        self._abandon()
                elif self._err is not None:
                    self._err += body[:ERROR_BODY_BYTES - len(self._err)]
                    if len(self._err) >= ERROR_BODY_BYTES:
                        self._abandon()
        except Exception as exc:
            self._accounting_failed(exc)
        finally:
            bodies.clear()

    def _accounting_failed(self, exc: Exception) -> None:
        """A bug in our accounting fails the request, not the loop."""
        if self._acc is not None and not self._acc.failure:
            self._acc.failure = f"client error: {type(exc).__name__}: {exc}"[:500]
        self._abandon()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.complete or self.end is None:
            return
        if self._close_delimited and self.head is not None and self.head.done():
            self._done()  # a body without length or chunking ends where the connection does
            return
        if self._any and self.head is not None and self.head.done():
            why = "Response payload is not completed"
            self._fail(aiohttp.ClientPayloadError(f"{why}: connection closed mid-body"
                                                  + (f" ({exc})" if exc else "")))
        else:
            self._fail(aiohttp.ServerDisconnectedError())

    # ---- llhttp's callbacks ----------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        n = name.lower()
        if n == b"location":
            self.reply.location = value.decode("latin-1")
        elif n == b"content-type":
            self.reply.content_type = value.decode("latin-1")
        elif n == b"content-encoding":
            self.reply.encoding = value.decode("latin-1").strip().lower()
        elif n == b"transfer-encoding":
            self._chunked = b"chunked" in value.lower()
        elif n == b"content-length":
            self._has_length = True

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        status = self.reply.status = self._parser.get_status_code()
        # Asked now, not once the reply is done: llhttp__after_message_complete (llhttp's
        # generated llhttp.c, as httptools vendors it) clears the message's flags, and
        # llhttp_should_keep_alive then sees neither chunking nor a length and answers False
        # for every reply: every request opened a new connection until this was read here.
        self._keep_alive = self._parser.should_keep_alive()
        self._close_delimited = not (self._chunked or self._has_length)
        if (status != 200 or self.reply.encoding not in ("", "identity")
                or needs_body(status, self.reply.content_type)):
            self._acc = None  # not streamed: its body (if any) is kept for the message
            self._err = bytearray()
        if self.head is not None and not self.head.done():
            self.head.set_result(None)

    def on_message_complete(self) -> None:
        self._done()

    # ---- one request -----------------------------------------------------------------------
    def begin(self, acc: StreamAccumulator, raw: Callable[[tuple[float, bytes]], None] | None,
              reply: Reply, now: float) -> None:
        loop = asyncio.get_running_loop()
        self._parser = httptools.HttpResponseParser(self)
        self._feed = self._parser.feed_data
        self._acc, self._raw, self._err = acc, raw, None
        self._bodies.clear()  # nothing of an earlier reply's last read
        self.reply = reply
        self.last = now
        self._any = self.complete = self._boundary = False
        self._chunk_cb = 0
        self._chunked = self._has_length = self._close_delimited = self._keep_alive = False
        self.head, self.end = loop.create_future(), loop.create_future()

    def reusable(self) -> bool:
        return (self.complete and not self.closed and self._keep_alive
                and not self._close_delimited)

    def finish(self) -> None:
        """Leave the request: nothing more reaches its accumulator."""
        if self._err is not None:
            self.reply.body = bytes(self._err)
        self._feed = None
        self._acc = self._raw = None
        self._err = None
        for fut in (self.head, self.end):  # mark any exception retrieved
            if fut is not None and fut.done() and not fut.cancelled():
                fut.exception()
        self.head = self.end = None

    def _done(self) -> None:
        self.complete = True
        self._feed = None
        if self.head is not None and not self.head.done():
            self.head.set_result(None)
        if self.end is not None and not self.end.done():
            self.end.set_result(None)

    def _abandon(self) -> None:
        """Stop reading this reply (an oversized event, an error body long enough): what we
        have is the answer; the connection cannot be reused."""
        self._feed = None
        self._acc = None  # llhttp may still hand on_body the rest of this read: it goes nowhere
        self._drop()
        if self.end is not None and not self.end.done():
            self.end.set_result(None)
        if self.head is not None and not self.head.done():
            self.head.set_result(None)

    def _fail(self, exc: BaseException) -> None:
        self._feed = None
        self._drop()
        for fut in (self.head, self.end):
            if fut is not None and not fut.done():
                fut.set_exception(exc)

    def _drop(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def stall(self) -> None:
        self._fail(Stalled())


class _Conn(_ConnBody, ConnState, asyncio.Protocol):  # type: ignore[misc]
    """The compiled read (where harness.client._fastread is built; else unused)."""

    __slots__ = _ConnBody.SLOTS


class _PyConn(_ConnBody, PyConnState, asyncio.Protocol):  # type: ignore[misc]
    """The Python read."""

    __slots__ = _ConnBody.SLOTS
    data_received = _ConnBody._read
