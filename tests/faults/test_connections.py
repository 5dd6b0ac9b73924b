"""What happens to the connection under a stream, over both client.transport readers: a reset
mid-body or before the reply, a request's own headers beside the client's, keep-alive reuse,
and the one retry of a pooled connection the server had already closed. Real HTTP on loopback
(split from test_replies.py, whose SSE event builders these replies reuse)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from harness.client.streaming import ClientSettings, StreamingClient
from harness.records import RequestRecord, RequestSpec
from tests.faults.test_replies import _DONE, _failed, _stream, _text, _usage
from tests.helpers import both_transports, loopback_app

# Every test here runs over both client.transport readers (aiohttp, httptools).
transport = both_transports(__name__)


def _reset_after(writes: list[bytes], head: bool = True) -> RequestRecord:
    """One request to a server that writes `writes` and then drops the connection (no
    terminating chunk); with head=False it drops it before any reply."""

    async def reply(request: web.Request) -> web.StreamResponse:
        await request.read()
        if not head:
            request.transport.close()
            await asyncio.sleep(0.05)
            raise ConnectionResetError
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for w in writes:
            await resp.write(w)
            await asyncio.sleep(0.0005)
        request.transport.close()
        await asyncio.sleep(0.05)
        return resp

    async def go() -> RequestRecord:
        async with (loopback_app("/v1/completions", reply) as url,
                    StreamingClient(ClientSettings(url)) as c):
            return await c.send(RequestSpec("r0", "/v1/completions", b"{}", 5, 63))

    return asyncio.run(go())


def test_a_connection_reset_mid_body_fails_with_the_payload_reason_and_keeps_the_chunks() -> None:
    rec = _reset_after([_text(i) for i in range(12)])
    _failed(rec, "ClientPayloadError: Response payload is not completed")
    assert rec.http_status == 200 and len(rec.chunk_ts) == 12 and rec.truncated


def test_a_connection_dropped_before_the_reply_is_a_server_disconnect() -> None:
    rec = _reset_after([], head=False)
    _failed(rec, "ServerDisconnectedError")
    assert rec.http_status == 0


async def _three_events(request: web.Request) -> web.StreamResponse:
    """A whole three-event stream in one write."""
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(b"".join(_stream(3, end=_usage(3) + _DONE)))
    await resp.write_eof()
    return resp


def test_a_requests_own_headers_go_out_and_the_clients_win() -> None:
    seen: dict[str, str] = {}

    async def reply(request: web.Request) -> web.StreamResponse:
        seen.update(request.headers)
        return await _three_events(request)

    async def go() -> RequestRecord:
        async with (loopback_app("/v1/completions", reply) as url,
                    StreamingClient(ClientSettings(url)) as c):
            spec = RequestSpec("r0", "/v1/completions", b"{}", 5, 3,
                               headers={"X-Session-Affinity": "s1", "Accept-Encoding": "gzip"})
            return await c.send(spec)

    rec = asyncio.run(go())
    assert rec.ok, rec.error
    assert seen["X-Session-Affinity"] == "s1" and seen["Accept-Encoding"] == "identity"


@pytest.mark.parametrize("keep_alive", [True, False])
def test_sequential_requests_reuse_one_keep_alive_connection(keep_alive: bool) -> None:
    """The server sees one client port for three requests in a row (a new one per request
    with client.keep_alive=false): a lost connection pool costs a TCP connect and close per
    request, on the client's core and the server's."""
    ports: list[int] = []

    async def reply(request: web.Request) -> web.StreamResponse:
        ports.append(request.transport.get_extra_info("peername")[1])  # type: ignore[union-attr]
        return await _three_events(request)

    async def go() -> list[RequestRecord]:
        async with (loopback_app("/v1/completions", reply) as url,
                    StreamingClient(ClientSettings(url, keep_alive=keep_alive)) as c):
            return [await c.send(RequestSpec(f"r{i}", "/v1/completions", b"{}", 5, 3))
                    for i in range(3)]

    recs = asyncio.run(go())
    assert all(r.ok for r in recs), [r.error for r in recs]
    assert len(ports) == 3 and len(set(ports)) == (1 if keep_alive else 3), ports


def test_a_reused_connection_the_server_dropped_is_retried_once_on_a_new_one() -> None:
    """A keep-alive connection closed by the server as the next request went out (the server
    never answered it) is retried once, on a fresh connection, and counted."""
    body = b"".join(_stream(3, end=_usage(3) + _DONE))
    reply = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    connections: list[int] = []

    class OneAnswerPerConnection(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport, self.seen = transport, 0
            connections.append(1)

        def data_received(self, data: bytes) -> None:
            if b"\r\n\r\n" not in data:
                return
            self.seen += 1
            if self.seen == 1:
                self.transport.write(reply)  # type: ignore[attr-defined]
            else:  # an idle-timeout close racing the client's next request
                self.transport.close()

    async def go() -> list[RequestRecord]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(OneAnswerPerConnection, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            async with StreamingClient(ClientSettings(url)) as c:
                return [await c.send(RequestSpec(f"r{i}", "/v1/completions", b"{}", 5, 3))
                        for i in range(2)]
        finally:
            server.close()

    first, second = asyncio.run(go())
    assert first.ok and first.retries == 0, first.error
    assert second.ok and second.retries == 1, second.error
    assert len(connections) == 2
