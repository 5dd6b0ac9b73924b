"""A streaming server that costs (almost) nothing: the load source for the client benchmark.

Raw asyncio protocol, HTTP/1.1 keep-alive, chunked SSE in the shape vLLM streams
(`/v1/completions`). Every `tick_ms` each open stream gets one socket write carrying
`events_per_tick` events; the first event of every write carries the server's send time
(`time.perf_counter()`, CLOCK_MONOTONIC on Linux, so the client on the same host can compute its
timestamp error). The last chunk carries `usage`, then `data: [DONE]`.

Run: python -m harness.testing.fast_sse_server --port 0 --events-per-tick 8 --tick-ms 1
It prints `PORT <n>` on stdout once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time

import orjson

_EVENT = (
    b'data: {"id":"cmpl-0","object":"text_completion","created":0,"model":"fast",'
    b'"choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null,'
    b'"stop_reason":null}],"t":%s}\n\n'
)
_STAMP_WIDTH = 20  # fixed-width time field so every event has the same length


def _stamp(t: float | None) -> bytes:
    if t is None:
        return b"null".ljust(_STAMP_WIDTH)
    return (b"%.9f" % t).ljust(_STAMP_WIDTH)


_PLAIN_EVENT = _EVENT % _stamp(None)


def _final(prompt_tokens: int, completion_tokens: int) -> bytes:
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    last = {
        "id": "cmpl-0",
        "object": "text_completion",
        "created": 0,
        "model": "fast",
        "choices": [{"index": 0, "text": "", "finish_reason": "length"}],
        "usage": usage,
    }
    return b"data: " + orjson.dumps(last) + b"\n\ndata: [DONE]\n\n"


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


_HEADERS = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
)


class _Stream:
    __slots__ = ("prompt_tokens", "remaining", "total", "transport")

    def __init__(self, transport: asyncio.Transport, total: int, prompt_tokens: int) -> None:
        self.transport = transport
        self.total = total
        self.remaining = total
        self.prompt_tokens = prompt_tokens


class FastSSEServer:
    """Owns the set of open streams and the single pacing loop that feeds them."""

    def __init__(self, events_per_tick: int, tick_ms: float) -> None:
        self.events_per_tick = events_per_tick
        self.tick_s = tick_ms / 1000.0
        self.streams: list[_Stream] = []
        self._plain_batches: dict[int, bytes] = {}

    def _batch(self, n: int) -> bytes:
        # n-1 plain events after the stamped one; cached by n (only the stamp changes per write).
        tail = self._plain_batches.get(n)
        if tail is None:
            tail = self._plain_batches[n] = _PLAIN_EVENT * (n - 1)
        return _EVENT % _stamp(time.perf_counter()) + tail

    async def pace(self) -> None:
        next_t = time.perf_counter()
        while True:
            next_t += self.tick_s
            keep: list[_Stream] = []
            for s in self.streams:
                if s.transport.is_closing():
                    continue
                n = min(self.events_per_tick, s.remaining)
                s.remaining -= n
                payload = self._batch(n)
                if s.remaining == 0:
                    payload += _final(s.prompt_tokens, s.total)
                    s.transport.write(_chunk(payload) + b"0\r\n\r\n")
                else:
                    s.transport.write(_chunk(payload))
                    keep.append(s)
            self.streams = keep
            delay = next_t - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                next_t = time.perf_counter()  # fell behind: do not burst to catch up
                await asyncio.sleep(0)


class _Protocol(asyncio.Protocol):
    def __init__(self, server: FastSSEServer) -> None:
        self.server = server
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].lower()
            i = head.find(b"content-length:")
            length = 0
            if i >= 0:
                j = head.find(b"\r\n", i)
                length = int(head[i + 15 : j if j >= 0 else len(head)])
            if len(self.buf) < head_end + 4 + length:
                return
            body = self.buf[head_end + 4 : head_end + 4 + length]
            self.buf = self.buf[head_end + 4 + length :]
            self._start(body)

    def _start(self, body: bytes) -> None:
        req = orjson.loads(body) if body else {}
        total = int(req.get("max_tokens", 16))
        prompt = req.get("prompt", "")
        prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        assert self.transport is not None
        self.transport.write(_HEADERS)
        self.server.streams.append(_Stream(self.transport, total, prompt_tokens))


async def serve(port: int, events_per_tick: int, tick_ms: float) -> None:
    server = FastSSEServer(events_per_tick, tick_ms)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: _Protocol(server), "127.0.0.1", port, backlog=1024)
    sock_port = srv.sockets[0].getsockname()[1]
    print(f"PORT {sock_port}", flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    pacer = asyncio.create_task(server.pace())
    await stop.wait()
    pacer.cancel()
    srv.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--events-per-tick", type=int, default=8)
    p.add_argument("--tick-ms", type=float, default=1.0)
    a = p.parse_args(argv)
    # The stock loop on purpose: its transport.write sends at once, so the stamp in a write is
    # its send time; uvloop holds writes until the end of the loop iteration.
    if hasattr(os, "sched_setaffinity") and os.environ.get("FAST_SSE_CPU"):
        os.sched_setaffinity(0, {int(os.environ["FAST_SSE_CPU"])})
    asyncio.run(serve(a.port, a.events_per_tick, a.tick_ms))


if __name__ == "__main__":
    sys.exit(main())
