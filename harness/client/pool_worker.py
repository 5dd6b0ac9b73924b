"""A client worker process of harness.client.pool, and the channel it talks to its parent on.

The channel: length-prefixed pickles over one end of a socketpair, both ways, as an asyncio
protocol (no stream reader: one parse per read, the large bodies copied once). The worker:
forked from the client's forkserver (harness.client.workers.process_context), it runs one
StreamingClient on uvloop and serves the parent's messages: ("send", seq, issued, spec) ->
("rec", seq, record); ("probe_start",) / ("probe_stop",) -> ("health", ClientHealth);
("close",). It tells the parent ("ready", pid) once its client is open, and ("fatal",
traceback) if it fails; it exits when the parent closes its end or dies.
"""

from __future__ import annotations

import asyncio
import gc
import os
import pickle
import signal
import socket
import struct
import time
import traceback
from collections.abc import Callable
from typing import Any

from harness.client.health import ClientHealth
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.records import RequestRecord, RequestSpec

_HEADER = struct.Struct("!Q")


class Channel(asyncio.Protocol):
    """Length-prefixed pickles over one end of a socketpair, both ways."""

    def __init__(self, on_message: Callable[[Any], None], on_lost: Callable[[], None]) -> None:
        self._buf = bytearray()
        self._on_message, self._on_lost = on_message, on_lost
        self._transport: Any = None  # uvloop's transports are not asyncio.Transport
        self._paused: asyncio.Future[None] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        while len(buf) >= _HEADER.size:
            (n,) = _HEADER.unpack_from(buf)
            end = _HEADER.size + n
            if len(buf) < end:
                return
            msg = pickle.loads(buf[_HEADER.size:end])
            del buf[:end]
            self._on_message(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.resume_writing()
        self._on_lost()

    def pause_writing(self) -> None:
        if self._paused is None:
            self._paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)
        self._paused = None

    def write(self, msg: Any) -> None:
        if self.closed or self._transport is None:
            return
        data = pickle.dumps(msg, pickle.HIGHEST_PROTOCOL)
        self._transport.writelines([_HEADER.pack(len(data)), data])

    async def drain(self) -> None:
        """Wait while the other end has not read what was written (bodies are large)."""
        if self._paused is not None:
            await asyncio.shield(self._paused)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def failed_record(spec: RequestSpec, issued: float, reason: str) -> RequestRecord:
    """A request its worker could not answer: kept, with the reason (nothing is dropped)."""
    rec = RequestRecord(spec.request_id, spec.phase, spec.expected_prompt_tokens,
                        spec.max_tokens, tags=dict(spec.tags))
    rec.issue_ts = rec.send_ts = issued
    rec.end_ts = time.perf_counter()
    rec.error = reason
    return rec


def worker_main(index: int, sock: socket.socket, settings: ClientSettings,
                 env: dict[str, str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it stops us
    os.environ.update(env)  # the forkserver's environment is the one it started with
    gc.freeze()  # what the forkserver imported: never walked by the collector again
    run_async(_serve(index, sock, settings))


async def _serve(index: int, sock: socket.socket, settings: ClientSettings) -> None:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    state: dict[str, Any] = {"tasks": set(), "probe": None}

    def lost() -> None:  # the parent closed its end or died: nothing left to serve
        if not done.done():
            done.set_result(None)

    def on_message(msg: Any) -> None:
        inbox = state.get("inbox")
        if inbox is not None:  # the parent sends nothing before "ready"
            inbox(msg)

    _, chan = await loop.create_unix_connection(lambda: Channel(on_message, lost), sock=sock)
    try:
        async with StreamingClient(settings) as client:
            state["inbox"] = _worker_inbox(index, client, chan, state, lost)
            chan.write(("ready", os.getpid()))
            await done
            for t in state["tasks"]:
                t.cancel()
    except Exception:  # the parent must hear why, then the exit is ours
        chan.write(("fatal", traceback.format_exc()))
        await chan.drain()
    finally:
        chan.close()


def _worker_inbox(index: int, client: StreamingClient, chan: Channel, state: dict[str, Any],
                  close: Callable[[], None]) -> Callable[[Any], None]:
    """What the worker does with each message from the parent."""
    tasks: set[asyncio.Task[None]] = state["tasks"]

    async def serve_one(seq: int, issued: float, got: float, spec: RequestSpec) -> None:
        try:
            rec = await client.send(spec)
        except Exception as exc:  # a bug fails its request; the parent never waits on it
            rec = failed_record(spec, issued, f"client worker {index}: "
                                f"{type(exc).__name__}: {exc}"[:500])
        # The hand-off is client queueing (module docstring): issue_ts is the parent's.
        moved = (rec.issue_ts if rec.retries == 0 else got) - issued
        rec.issue_ts -= moved
        rec.queue_delay_s += moved  # NaN (the body never went out) stays NaN
        # The parent holds the spec's own tags; these are the pool's (harness.client.pool)
        rec.tags = {"client_worker": index, "client_handoff_s": got - issued}
        chan.write(("rec", seq, rec))

    async def stop_probe() -> None:
        probe, state["probe"] = state["probe"], None
        chan.write(("health", await probe.stop() if probe is not None else ClientHealth()))

    def on_message(msg: Any) -> None:
        kind = msg[0]
        if kind == "send":
            task = asyncio.create_task(serve_one(msg[1], msg[2], time.perf_counter(), msg[3]))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif kind == "probe_start":
            state["probe"] = client.health_probe()
            state["probe"].start()
        elif kind == "probe_stop":
            tasks.add(task := asyncio.create_task(stop_probe()))
            task.add_done_callback(tasks.discard)
        elif kind == "close":
            close()

    return on_message


