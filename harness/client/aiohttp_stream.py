"""The streaming body over aiohttp (`client.transport=aiohttp`, the default): every chunk aiohttp
receives is stamped and fed to the request's `sse.StreamAccumulator` where aiohttp hands it over
(harness.client.arrival's push mode). The httptools transport's counterpart is
harness.client.h1_stream; the request around both is harness.client.streaming's."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from harness.client import arrival
from harness.client.sse import StreamAccumulator
from harness.records import RequestRecord


class _Abandoned(Exception):
    """Ends the wait for a stream the accumulator gave up on (an oversized event)."""


class _Stalled(Exception):
    """Ends the wait for a stream that sent nothing for client.stall_timeout_s."""


async def push_stream(resp: aiohttp.ClientResponse, acc: StreamAccumulator,
                       rec: RequestRecord, keep_raw: bool, stall_s: float) -> None:
    """Feed every received chunk of the body to the accumulator as aiohttp hands it over,
    stamped then (harness.client.arrival's push mode), until EOF. No reader wake-up, read or split
    per chunk: about half the per-chunk cost of reading the body through the StreamReader.
    Runs inside aiohttp's protocol callback, so nothing in the sink may raise.

    No byte for `stall_s` raises TimeoutError, as aiohttp's sock_read would; but aiohttp
    re-arms that timer on every read (a cancel and a call_later), so for the body it is
    switched off and one timer of ours, re-armed only when it fires, watches the last read."""
    content = resp.content
    raw = None
    if keep_raw:
        rec.raw_reads = []
        raw = rec.raw_reads.append
    feed = acc.feed
    last = [time.perf_counter()]

    def sink(data: bytes, t: float) -> None:
        last[0] = t
        if acc.failure:  # given up: the rest is dropped, the connection closed on exit
            return
        try:
            feed(data, t)
        except Exception as exc:  # a bug here must fail the request, not aiohttp's protocol
            acc.failure = f"client error: {type(exc).__name__}: {exc}"[:500]
        if raw is not None:
            raw((t, data))
        if acc.failure:
            content.set_exception(_Abandoned())

    loop = asyncio.get_running_loop()

    def watch() -> None:
        idle = time.perf_counter() - last[0]
        if idle >= stall_s:
            content.set_exception(_Stalled())
        else:
            timer[0] = loop.call_later(stall_s - idle, watch)

    timer = [loop.call_later(stall_s, watch)]
    if resp.connection is not None and resp.connection.protocol is not None:
        resp.connection.protocol.read_timeout = None  # this response's only: set per request
    early = content.read_nowait()  # what came with the headers, before the sink was in place
    if early:
        sink(early, time.perf_counter())
    arrival.push(content, sink)
    try:
        if not acc.failure and not content.is_eof():
            await content.wait_eof()
    except _Abandoned:
        pass
    except _Stalled:
        raise TimeoutError(f"no byte for {stall_s:g} s") from None
    finally:
        timer[0].cancel()
        arrival.unpush(content)
