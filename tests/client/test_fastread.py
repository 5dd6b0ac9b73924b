"""The compiled steady read (harness/client/_fastread.c) against the Python read it stands in
for: the same reads, whatever their boundaries, leave the same accounting and the same record.

Each case drives a connection of each class (`_Conn`, compiled; `_PyConn`, Python) with the
same socket reads of one chunked reply, no socket in between, and compares everything the
reads leave: reads stamped, events per read, pending bytes, and the finished record with its
chunks mapped back to the reads that brought them. The fault tests (tests/faults) run the
compiled path over real loopback connections."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from harness.client import read_state
from harness.client.h1_conn import Reply, _Conn, _ConnBody, _PyConn
from harness.client.loop_passes import PASSES
from harness.client.sse import StreamAccumulator
from harness.records import RequestRecord

# Skipped where the module did not build, unless required (CI): then they fail.
compiled = pytest.mark.skipif(
    not read_state.COMPILED and not os.environ.get("HARNESS_REQUIRE_COMPILED_READ"),
    reason=f"no compiled read here: {read_state.WHY}")

_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n")


@compiled
def test_the_compiled_read_is_built_where_ci_requires_it() -> None:
    assert read_state.COMPILED, read_state.WHY


def _ev(obj: object) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _events(n: int, odd_at: int = -1, odd: bytes = b"") -> list[bytes]:
    out = [_ev({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})]
    for i in range(n):
        if i == odd_at:
            out.append(odd)
        out.append(_ev({"choices": [{"index": 0, "text": f" t{i}" * (1 + i % 3),
                                     "finish_reason": None}]}))
    out.append(_ev({"choices": [{"index": 0, "text": "", "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": n}}))
    return [*out, b"data: [DONE]\n\n"]


def _chunk(body: bytes, upper: bool = False) -> bytes:
    size = b"%X" % len(body) if upper else b"%x" % len(body)
    return size + b"\r\n" + body + b"\r\n"


def _aligned(events: list[bytes]) -> list[bytes]:
    """As an engine writes at one event per step: the head, then a chunk a read."""
    return [_HEAD, *(_chunk(e) for e in events), b"0\r\n\r\n"]


def _mixed(events: list[bytes], seed: int) -> list[bytes]:
    """Mostly a chunk a read; some reads of several chunks, some split inside a chunk (in its
    size line, its data, its closing CRLF), some chunks in upper-case hex or zero-padded."""
    rng = random.Random(seed)
    chunks = []
    for e in events:
        c = _chunk(e, upper=rng.random() < 0.1)
        if rng.random() < 0.05:
            c = b"00" + c
        chunks.append(c)
    reads, i = [_HEAD + chunks[0]], 1
    while i < len(chunks):
        roll = rng.random()
        if roll < 0.1:  # several chunks in one read
            k = rng.randint(2, 4)
            reads.append(b"".join(chunks[i:i + k]))
            i += k
        elif roll < 0.25:  # one chunk over two reads, cut anywhere
            c = chunks[i]
            cut = rng.randint(1, len(c) - 1)
            reads += [c[:cut], c[cut:]]
            i += 1
        elif roll < 0.3 and i + 1 < len(chunks):  # the cut falls across two chunks
            c = chunks[i] + chunks[i + 1]
            cut = rng.randint(len(chunks[i]) - 2, len(chunks[i]) + 3)
            reads += [c[:cut], c[cut:]]
            i += 2
        else:
            reads.append(chunks[i])
            i += 1
    return [*reads, b"0\r\n\r\n"]


def _anywhere(events: list[bytes], seed: int) -> list[bytes]:
    """The whole reply cut at random, nothing aligned."""
    rng = random.Random(seed)
    data = _HEAD + b"".join(_chunk(e) for e in events) + b"0\r\n\r\n"
    reads, pos = [], 0
    while pos < len(data):
        n = rng.randint(1, 400)
        reads.append(data[pos:pos + n])
        pos += n
    return reads


class _Transport:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def _drive(cls: type[_ConnBody], reads: list[bytes], raw: bool = False,
           max_event_bytes: int = 4 << 20) -> dict[str, object]:
    """Feed `reads` to a fresh connection of `cls`; what the reads left behind."""

    async def go() -> dict[str, object]:
        conn = cls()
        conn.connection_made(_Transport())  # type: ignore[arg-type]
        acc = StreamAccumulator(max_event_bytes=max_event_bytes)
        sink: list[tuple[float, bytes]] = []
        conn.begin(acc, sink.append if raw else None, Reply(), time.perf_counter())
        slow = [0]
        real = cls._read

        def counted(self: _ConnBody, data: bytes, t: float | None = None) -> None:
            slow[0] += 1
            real(self, data, t)

        python_reads = cls.data_received is real  # type: ignore[attr-defined]
        cls._read = counted  # type: ignore[method-assign]
        if python_reads:
            cls.data_received = counted  # type: ignore[attr-defined]
        try:
            for r in reads:
                before = time.perf_counter()
                conn.data_received(r)  # type: ignore[attr-defined]
                assert before <= conn.last <= time.perf_counter()  # perf_counter's clock
        finally:
            cls._read = real  # type: ignore[method-assign]
            if python_reads:
                cls.data_received = real  # type: ignore[attr-defined]
        conn.finish()
        rec = RequestRecord("r", "measured", 5, 999)
        acc.finish(rec, time.perf_counter())
        ts = np.asarray(acc.read_ts)
        return {
            "reads": len(acc.read_ts), "counts": list(acc._counts), "extra": acc._extra,
            "pend": b"".join(acc._pend), "pend_first": acc._pend_first,
            "suspects": list(acc._suspects), "skip": list(acc._skip),
            "chunk_reads": np.searchsorted(ts, np.asarray(rec.chunk_ts)).tolist(),
            "record": (rec.completion_tokens, rec.finish_reason, rec.error, rec.truncated),
            "complete": conn.complete, "status": conn.reply.status,
            "raw": [b for _, b in sink], "slow_reads": slow[0],
            # each sampled read carries its read's own stamp (the stamps differ per path)
            "raw_stamped": set(t for t, _ in sink) <= set(acc.read_ts),
        }

    return asyncio.run(go())


def _same(reads: list[bytes], **kw: object) -> tuple[dict[str, object], dict[str, object]]:
    fast, py = _drive(_Conn, reads, **kw), _drive(_PyConn, reads, **kw)  # type: ignore[arg-type]
    for k in py:
        if k != "slow_reads":
            assert fast[k] == py[k], k
    assert py["slow_reads"] == len(reads)  # the Python class reads everything itself
    return fast, py


@compiled
def test_a_chunk_a_read_is_taken_in_c_and_accounted_as_python_does() -> None:
    events = _events(400)
    fast, _ = _same(_aligned(events))
    assert fast["record"] == (400, "length", "", False)
    assert len(fast["chunk_reads"]) == 400  # type: ignore[arg-type]
    # Everything but the head and the reads before llhttp is seen between chunks, and the
    # tail past the last content event (usage, [DONE], the last chunk), skips the Python read.
    assert fast["slow_reads"] <= 6, fast["slow_reads"]
    assert fast["pend_first"] > 0  # the pending reads were trimmed on the way (32 kB)


@compiled
@pytest.mark.parametrize("seed", range(12))
def test_reads_cut_anywhere_leave_the_same_accounting(seed: int) -> None:
    events = _events(300, odd_at=seed * 20, odd=b": keep-alive\n\n")
    _same(_mixed(events, seed))
    _same(_anywhere(events, seed))


@compiled
@pytest.mark.parametrize(("odd", "error"), [
    (b"data: \n\n", "malformed SSE event"),  # ends "\n": flagged, parsed, empty
    (b"data: [1, 2]\n\n", "malformed SSE event"),  # ends "]": flagged, not an object
    (b"xdata: {}\n\n", ""),  # begins "x": flagged, parsed, no data field: no chunk
    (b"event: error\ndata: {\"error\": {\"message\": \"engine died\"}}\n\n", "engine died"),
    # Framed `data: {...}`, bad inside: the fast path does not parse it (sse.py's docstring)
    (b"data: {not json}\n\n", ""),
])
def test_an_odd_event_mid_stream_is_accounted_alike(odd: bytes, error: str) -> None:
    fast, _ = _same(_aligned(_events(200, odd_at=120, odd=odd)))
    why = fast["record"][2]  # type: ignore[index]
    assert error in why and bool(error) == bool(why), why


@compiled
def test_sampled_raw_reads_are_taken_in_c_and_an_endless_event_goes_the_python_way() -> None:
    events = _events(100)
    fast, _ = _same(_aligned(events), raw=True)  # the same raw sample, read for read
    # A sampled request (RequestSpec.keep_raw, one in 50 in the benchmarks) is read in C too,
    # so that it costs what the others cost; its sample holds every body, each stamped.
    assert fast["slow_reads"] <= 6, fast["slow_reads"]
    assert len(fast["raw"]) >= len(events) and fast["raw_stamped"]  # type: ignore[arg-type]
    # An event that never ends, 1 kB a chunk: stopped once 4 kB + twice the tail are held
    endless = [_HEAD, *(_chunk(e) for e in events[:20]),
               *(_chunk(b"data: {\"x\": \"" + b"y" * 1000) for _ in range(60))]
    fast, _ = _same(endless, max_event_bytes=4096)
    assert "larger than 4096 bytes" in fast["record"][2]  # type: ignore[operator, index]


@compiled
def test_a_read_after_the_reply_or_a_bad_chunk_size_is_refused_alike() -> None:
    events = _events(50)
    reads = _aligned(events)
    fast, _ = _same([*reads, _chunk(events[3])])  # bytes after the reply ended
    assert fast["complete"]
    bad = [*reads[:20], b"zz\r\n" + events[20] + b"\r\n", *reads[21:]]
    fast, _ = _same(bad)
    assert not fast["complete"]


@compiled
def test_a_read_shaped_like_a_chunk_inside_a_chunks_data_is_left_to_llhttp() -> None:
    """Whether llhttp is between chunks is known from its callbacks, not guessed from a read's
    shape: here a chunk's data is `a\\r\\ndata: {}\\n\\n` (one odd event), its size line comes
    alone, and the next read is exactly a size-10 chunk of a well-framed event."""
    events = _events(40)
    data = b"a\r\ndata: {}\n\n"
    reads = _aligned(events)
    trap = [b"%x\r\n" % len(data), data + b"\r\n"]
    assert trap[1] == _chunk(b"data: {}\n\n")  # what the compiled read would take, wrongly
    fast, _ = _same([*reads[:30], *trap, *reads[30:]])
    assert fast["record"][:3] == (40, "length", "")  # type: ignore[index]
    assert fast["pend"].count(b"a\r\ndata: {}") == 1  # type: ignore[attr-defined]


def _passes(cls: type[_ConnBody], bursts: list[list[bytes]]) -> tuple[int, int]:
    """(reads counted, passes opened) by the process's pass meter over `bursts`, each burst
    read in one loop pass."""

    async def go() -> tuple[int, int]:
        conn = cls()
        conn.connection_made(_Transport())  # type: ignore[arg-type]
        conn.begin(StreamAccumulator(), None, Reply(), time.perf_counter())
        PASSES.start()
        try:
            for burst in bursts:
                for r in burst:
                    conn.data_received(r)  # type: ignore[attr-defined]
                await asyncio.sleep(0)  # the pass ends: its closing callback runs
                assert not PASSES._open
                await asyncio.sleep(0)
        finally:
            PASSES.stop()
        return PASSES.reads(), int(PASSES.hist[0])

    return asyncio.run(go())


@compiled
def test_the_pass_meter_counts_compiled_reads_as_python_reads() -> None:
    reads = _aligned(_events(60))
    bursts = [reads[i:i + 7] for i in range(0, len(reads), 7)]
    fast, py = _passes(_Conn, bursts), _passes(_PyConn, bursts)  # type: ignore[arg-type]
    assert fast[0] == py[0] == len(reads)
    assert fast[1] >= len(bursts) and py[1] >= len(bursts)  # each pass's first read in bin 0


def test_without_the_compiled_module_the_python_twins_stream_the_same() -> None:
    """HARNESS_READ_PATH=python: no C type at all (a host where the module did not build)."""
    code = (
        "from harness.client import read_state as r, sse, loop_passes, h1_conn\n"
        "assert not r.COMPILED and r.read_path().startswith('python')\n"
        "assert sse.StreamAccumulator.__mro__[1] is r.PyFeedState\n"
        "assert loop_passes.PassMeter.__mro__[1] is r.PyMeterState\n"
        "assert h1_conn._PyConn.data_received is h1_conn._ConnBody._read\n"
        "import tests.client.test_fastread as t\n"
        "out = t._drive(h1_conn._PyConn, t._mixed(t._events(200), 3))\n"
        "assert out['record'] == (200, 'length', '', False), out['record']\n"
        "print('ok')\n")
    env = {**os.environ, "HARNESS_READ_PATH": "python"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]

