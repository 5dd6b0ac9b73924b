"""A server that accepts request bodies of any size and answers at once: the zero-cost load
sink for benchmarks/agentic_scale.py (what the client costs to build and send AgentX-sized
prompts, with nothing on the other side).

Raw asyncio protocol, HTTP/1.1 keep-alive. Each request's body (Content-Length; chunked bodies
are refused) is counted and dropped as it arrives, never held; the reply is one canned chat SSE
stream: one content token, usage (completion 1, prompt = body bytes, so a client can tell its
bodies arrived whole), [DONE]. `GET /stats` returns the bytes and requests received.

Run: python -m harness.testing.sink_server --port 0   (prints `PORT <n>` once it listens)
"""

from __future__ import annotations

import argparse
import asyncio
import signal

import orjson

_EVENT = (b'data: {"object":"chat.completion.chunk",'
          b'"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n')
_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n"
         b"Connection: keep-alive\r\n\r\n")
_MAX_HEAD = 65536


def _reply(body_bytes: int) -> bytes:
    usage = {"object": "chat.completion.chunk", "choices": [],
             "usage": {"prompt_tokens": body_bytes, "completion_tokens": 1,
                       "total_tokens": body_bytes + 1}}
    sse = _EVENT + b"data: " + orjson.dumps(usage) + b"\n\ndata: [DONE]\n\n"
    return _HEAD % len(sse) + sse


class Stats:
    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0


class SinkProtocol(asyncio.Protocol):
    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self.buf = b""
        self.remaining = -1  # body bytes still to drop; -1: reading a head
        self.body = 0
        self.stats_request = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        while data:
            if self.remaining >= 0:  # inside a body: count, drop
                take = min(len(data), self.remaining)
                self.remaining -= take
                data = data[take:] if take < len(data) else b""
                if self.remaining == 0:
                    self._answer()
                continue
            self.buf += data
            data = b""
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > _MAX_HEAD:
                    self.transport.close()
                return
            head, rest = self.buf[:end], self.buf[end + 4:]
            self.buf = b""
            if not self._start(head):
                return
            data = rest
            if self.remaining == 0:
                self._answer()

    def _start(self, head: bytes) -> bool:
        lines = head.split(b"\r\n")
        self.stats_request = lines[0].startswith(b"GET /stats")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                self.transport.write(b"HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\n"
                                     b"Connection: close\r\n\r\n")
                self.transport.close()
                return False
        self.remaining = self.body = length
        return True

    def _answer(self) -> None:
        self.remaining = -1
        if self.stats_request:
            payload = orjson.dumps({"requests": self.stats.requests, "bytes": self.stats.bytes})
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
            return
        self.stats.requests += 1
        self.stats.bytes += self.body
        self.transport.write(_reply(self.body))


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    stats = Stats()
    server = await loop.create_server(lambda: SinkProtocol(stats), "127.0.0.1", port,
                                      backlog=4096)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    server.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    try:
        import uvloop

        uvloop.run(main(ap.parse_args().port))
    except ImportError:
        asyncio.run(main(ap.parse_args().port))
