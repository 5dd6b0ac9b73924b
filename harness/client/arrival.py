"""Arrival stamps taken where aiohttp hands received bytes to a response, not when our
coroutine next runs.

Under load one event-loop pass delivers a burst of reads (an engine writes every stream after
each decode step); stamping in the coroutine makes the last stream in a burst wait for every
other stream's processing. aiohttp's parser calls `StreamReader.feed_data` for each body chunk
as it is received; wrapping that method records `(time, size)` per chunk for the responses the
client registered, so each SSE event gets the time its bytes were handed over (never earlier).

The wrapper is installed once per process and costs one dict lookup per chunk for responses
nobody registered. If aiohttp ever stops calling `feed_data`, registered lists stay empty and
the client falls back to stamping at read time (`stamps_for` returns None).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aiohttp import streams

from harness.client.loop_passes import PASSES

_REGISTERED: dict[int, list[tuple[float, int]]] = {}
# Push mode: a response body whose every received chunk goes straight to a sink with its
# arrival time, never buffered in the StreamReader (no reader wake-up per chunk).
_SINKS: dict[int, Callable[[bytes, float], None]] = {}
_original_feed_data = streams.StreamReader.feed_data
_installed = False


def _feed_data(self: Any, data: bytes, size: int = 0) -> bool:
    sink = _SINKS.get(id(self))
    if sink is not None:
        if data:
            t = time.perf_counter()
            PASSES.read(t)
            sink(data, t)
        return False
    pieces = _REGISTERED.get(id(self))
    if pieces is not None and data:
        pieces.append((time.perf_counter(), len(data)))
    return _original_feed_data(self, data, size)


def install() -> None:
    global _installed
    if not _installed:
        streams.StreamReader.feed_data = _feed_data  # type: ignore[method-assign]
        _installed = True


def register(reader: Any) -> list[tuple[float, int]]:
    """Start recording arrivals for one response body; returns the live list."""
    return _REGISTERED.setdefault(id(reader), [])


def unregister(reader: Any) -> None:
    _REGISTERED.pop(id(reader), None)


def push(reader: Any, sink: Callable[[bytes, float], None]) -> None:
    """From now on every chunk received for `reader` goes to sink(data, arrival time) instead
    of its buffer (read what is already buffered first). The sink must not raise."""
    _SINKS[id(reader)] = sink


def unpush(reader: Any) -> None:
    _SINKS.pop(id(reader), None)


def pieces_for(buf: bytes, pieces: list[tuple[float, int]]) -> list[tuple[float, bytes]] | None:
    """Split one read into the received chunks it joined, each with its arrival time.

    None when the recorded sizes do not add up to the read (then stamp at read time).
    """
    if len(pieces) == 1:
        return [(pieces[0][0], buf)] if pieces[0][1] == len(buf) else None
    if not pieces or sum(n for _, n in pieces) != len(buf):
        return None
    out, pos = [], 0
    for t, n in pieces:
        out.append((t, buf[pos:pos + n]))
        pos += n
    return out
