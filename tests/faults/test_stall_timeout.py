"""client.stall_timeout_s: a stream that sends nothing for that long fails with the stall
reason; one that keeps sending, however slowly, does not. Real HTTP on loopback: a tiny aiohttp
server writes events on a schedule. The body's watch is the client's own timer (aiohttp's
sock_read re-armed a timer on every read); the wait for headers is still aiohttp's."""

from __future__ import annotations

import asyncio
import time

import orjson
from aiohttp import web

from harness.client.streaming import STALL_ERROR, ClientSettings, StreamingClient
from harness.records import RequestRecord, RequestSpec
from tests.helpers import both_transports, loopback_app

transport = both_transports(__name__)  # every test over both client.transport readers

STALL_S = 0.3


def _ev(i: int) -> bytes:
    return b"data: " + orjson.dumps({"choices": [{"index": 0, "text": f" t{i}"}]}) + b"\n\n"


_END = (b"data: " + orjson.dumps({"choices": [{"index": 0, "text": "", "finish_reason": "length"}],
                                  "usage": {"prompt_tokens": 5, "completion_tokens": 4}})
        + b"\n\ndata: [DONE]\n\n")


def _serve(head_wait: float, gaps: list[float], requests: int = 1) -> list[RequestRecord]:
    """`requests` requests one after another on one client; the first reply waits head_wait
    before its headers, then writes one event after each gap; later replies are quick."""
    served = [0]

    async def reply(request: web.Request) -> web.StreamResponse:
        await request.read()
        first = served[0] == 0
        served[0] += 1
        if first:
            await asyncio.sleep(head_wait)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i, gap in enumerate(gaps if first else [0.001] * 4):
            await asyncio.sleep(gap)
            await resp.write(_ev(i))
        await resp.write(_END)
        await resp.write_eof()
        return resp

    async def go() -> list[RequestRecord]:
        async with (loopback_app("/v1/completions", reply) as url,
                    StreamingClient(ClientSettings(url, stall_timeout_s=STALL_S)) as c):
            return [await c.send(RequestSpec(f"r{i}", "/v1/completions", b"{}", 5, 4))
                    for i in range(requests)]

    return asyncio.run(go())


def test_a_slow_stream_that_keeps_sending_is_not_a_stall() -> None:
    # 8 events 0.12 s apart: 1 s in all, over three times the stall timeout
    (rec,) = _serve(0.0, [0.12] * 8)
    assert rec.ok, rec.error
    assert len(rec.chunk_ts) == 8 and rec.end_ts - rec.send_ts > 3 * STALL_S


def test_a_stream_that_stops_fails_as_stalled_and_the_next_request_is_clean() -> None:
    t0 = time.perf_counter()
    stalled, after = _serve(0.0, [0.01, 0.01, 1.5], requests=2)
    assert not stalled.ok and stalled.error.startswith(STALL_ERROR), stalled.error
    assert len(stalled.chunk_ts) == 2
    waited = stalled.end_ts - stalled.chunk_ts[-1]
    assert STALL_S <= waited < STALL_S + 0.2, waited  # from the last byte, not the send
    assert after.ok and len(after.chunk_ts) == 4, after.error  # not its connection
    assert time.perf_counter() - t0 < 3.0


def test_no_headers_for_the_stall_timeout_is_a_stall() -> None:
    (rec,) = _serve(1.5, [0.01])
    assert not rec.ok and rec.error.startswith(STALL_ERROR), rec.error
    assert STALL_S <= rec.end_ts - rec.send_ts < STALL_S + 0.3
