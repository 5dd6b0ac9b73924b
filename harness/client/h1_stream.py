"""The streaming request over our own HTTP/1.1 reader (`client.transport=httptools`).

aiohttp spends most of a one-event read between the socket and our accounting (its protocol,
parser, payload stream and our `feed_data` hook; docs/client.md "Ingest per core"). Here the
socket is read by an `asyncio.Protocol` of ours (on uvloop where installed) and parsed by
httptools' binding of llhttp, the C parser Node.js uses: every read is stamped in
`data_received` before it is parsed; llhttp's `on_body` (a list's append, no Python frame)
collects the read's body slices (chunk framing removed), and `data_received` hands them to the
request's `sse.StreamAccumulator` with that stamp once llhttp returns. No
StreamReader, no reader wake-up, no per-read timer: one stall timer per request, re-armed only
when it fires, watches the last read's stamp (from the send: the wait for headers counts too,
as aiohttp's sock_read does). Where harness.client._fastread is built (`client.read_path=
compiled`, the default) the read that dominates a stream, one whole chunk of one whole event
while llhttp is between chunks, is stamped and accounted in C without llhttp or an interpreter
frame, exactly as this module and sse.py would (docs/client.md, "The compiled read").

What is kept from the aiohttp path (harness.client.streaming), with the same reasons: no
redirects, identity encoding only (compressed replies refused), the body of a non-200 reply read
up to a bound for its message, oversize events stop the read and close the connection,
keep-alive connections reused (a reused connection found closed before any reply is retried
once by the caller), and a connection that ends early raises aiohttp's own exceptions
(`ServerDisconnectedError` before the reply's end, `ClientPayloadError` mid-body) so every
failure is worded as on the aiohttp path.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable

import aiohttp
from yarl import URL

from harness.client.h1_conn import Reply, Stalled, _Conn, _ConnBody, _PyConn
from harness.client.read_state import COMPILED
from harness.client.sse import StreamAccumulator

__all__ = ["H1Streams", "Reply", "Stalled"]


class H1Streams:
    """Keep-alive connections to one origin, and the streaming exchange over them."""

    def __init__(self, base_url: str, headers: dict[str, str], connect_timeout_s: float,
                 stall_s: float, keep_alive: bool, read_path: str = "compiled") -> None:
        url = URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"client.transport=httptools needs an http(s) URL, got {base_url!r}")
        self._host, self._port = url.host, url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl.create_default_context() if url.scheme == "https" else None
        self._prefix = url.path.rstrip("/")
        host = url.host if url.is_default_port() else f"{url.host}:{url.port}"
        fixed = {"Host": host, "User-Agent": "harness", **headers}
        if not keep_alive:
            fixed["Connection"] = "close"
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self._fixed = {k.lower() for k in fixed}  # a request's own headers cannot replace these
        self._connect_s, self._stall_s, self._keep_alive = connect_timeout_s, stall_s, keep_alive
        self._idle: list[_ConnBody] = []
        # client.read_path: "compiled" where the module is built, else (or "python") Python
        self._conn: type[_ConnBody] = _Conn if COMPILED and read_path == "compiled" else _PyConn
        self._heads: dict[str, bytes] = {}  # the request line and headers, per path

    def close(self) -> None:
        for conn in self._idle:
            conn._drop()
        self._idle.clear()

    async def _connect(self) -> _ConnBody:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_s):
                _, conn = await loop.create_connection(self._conn, self._host, self._port,
                                                       ssl=self._ssl)
        except OSError as exc:
            raise aiohttp.ClientOSError(
                exc.errno, f"Cannot connect to host {self._host}:{self._port} "
                f"[{exc.strerror or exc}]") from None
        return conn

    async def _take(self, on_connect: Callable[[bool, float], None]) -> _ConnBody:
        """An idle keep-alive connection still open, else a new one (its set-up timed)."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                on_connect(True, 0.0)
                return conn
        t0 = time.perf_counter()
        conn = await self._connect()
        on_connect(False, time.perf_counter() - t0)
        return conn

    def _request(self, path: str, body: bytes, extra: dict[str, str] | None) -> bytes:
        head = self._heads.get(path)
        if head is None:
            head = self._heads[path] = (f"POST {self._prefix}{path} HTTP/1.1\r\n".encode()
                                        + self._head)
        if extra:  # a request's own headers (agentic session affinity), the client's win
            head += "".join(f"{k}: {v}\r\n" for k, v in extra.items()
                            if k.lower() not in self._fixed
                            and k.lower() != "content-length").encode("latin-1")
        return b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)

    async def exchange(self, path: str, body: bytes, acc: StreamAccumulator,
                       raw: Callable[[tuple[float, bytes]], None] | None,
                       reply: Reply, on_sent: Callable[[float], None],
                       on_connect: Callable[[bool, float], None],
                       extra: dict[str, str] | None = None) -> None:
        """Send one POST and read its reply: a 200 identity stream into `acc`, of any other
        reply its status, Location, encoding and the first ERROR_BODY_BYTES of its body, into
        `reply` for the caller to word (the status is there whatever happens after it came).
        Raises aiohttp's exceptions for a connection that fails, TimeoutError for a stall
        (client.stall_timeout_s)."""
        conn = await self._take(on_connect)
        data = self._request(path, body, extra)
        loop = asyncio.get_running_loop()
        conn.begin(acc, raw, reply, time.perf_counter())
        assert conn.transport is not None
        # Stamped as the write starts, as aiohttp's on_request_chunk_sent is: uvloop writes to
        # the socket at once, and a server on another core may read it before write() returns.
        on_sent(time.perf_counter())
        conn.transport.write(data)
        stall_s = self._stall_s

        def watch() -> None:
            idle = time.perf_counter() - conn.last
            if idle >= stall_s:
                conn.stall()
            else:
                timer[0] = loop.call_later(stall_s - idle, watch)

        timer = [loop.call_later(stall_s, watch)]
        ok = False
        try:
            try:
                assert conn.head is not None and conn.end is not None
                await conn.head
                await conn.end
            except Stalled:
                raise TimeoutError(f"no byte for {stall_s:g} s") from None
            ok = True
        finally:
            timer[0].cancel()
            conn.finish()
            if ok and self._keep_alive and conn.reusable():
                self._idle.append(conn)
            else:
                conn._drop()
