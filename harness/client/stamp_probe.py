"""A measured, not estimated, timestamp error: stamps from another process, read like chunks.

A writer process (harness/client/stamp_writer.py) sends its `perf_counter` at Poisson instants
over a datagram socketpair; the client's event loop reads them with a reader callback, on the same
poll as every response socket, and stamps them as it stamps a chunk. Each difference is the
delay between "data arrived" and "the client stamped it" for an arrival at a random instant:
the client's stamp error, sampled under whatever load the loop is under (a busy loop, a
descheduled process, a garbage-collection pause all show). perf_counter is CLOCK_MONOTONIC on
Linux, one clock for both processes.

Why not only the timer probe (harness.client.health): a timer's lateness shows how long the
loop could not run, but not what a chunk waits behind the rest of a long pass, nor a wake-up
from an idle core; measured against the server's write stamps (benchmarks/client_ingest.py)
the lateness model missed by up to 2x in both directions. docs/client.md, "Stamp error".
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# 500 samples a second. What they cost the client is mostly its wake-ups between bursts of
# reads: ~1.5 % of a core when idle, 0.26-0.60 us a read at c64 with one event per write
# (3-7 %; docs/client.md, "Keep-alive on the httptools transport").
MEAN_INTERVAL_S = 0.002
_WRITER = Path(__file__).with_name("stamp_writer.py")
_UNPACK = struct.Struct("d").unpack_from


def _away_from_client(pid: int) -> None:
    """Run the writer on cores the client may not use, where there are any: a chunk arrives
    from elsewhere (the server's core, a NIC's interrupt), and waking a client whose core sits
    idle is slower than waking it from a process on its own core, which is all a writer
    sharing it would ever measure (docs/client.md, "Stamp error")."""
    try:
        mine = os.sched_getaffinity(0)
        others = set(range(os.cpu_count() or 1)) - mine
        if others:
            os.sched_setaffinity(pid, others)
    except (AttributeError, OSError):  # no affinity here, or the writer already gone
        pass


class StampProbe:
    """Start in a running loop, stop at the end of the phase: `errors_ms()` are the samples."""

    def __init__(self, mean_interval_s: float = MEAN_INTERVAL_S, seed: int = 0) -> None:
        self.mean_interval_s, self.seed = mean_interval_s, seed
        self._errors: list[float] = []
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.failure = ""  # why no samples could be taken ("" when it ran)

    def start(self) -> None:
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        except OSError as e:  # no AF_UNIX: the timer probe's estimate stands alone
            self.failure = f"no socketpair: {e}"
            return
        ours.setblocking(False)
        theirs.setblocking(False)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_WRITER), str(theirs.fileno()),
                 repr(self.mean_interval_s), str(self.seed)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as e:
            ours.close()
            self.failure = f"writer did not start: {e}"
            return
        finally:
            theirs.close()
        _away_from_client(self._proc.pid)
        self._sock = ours
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(ours.fileno(), self._read)

    def _read(self) -> None:
        now = time.perf_counter()  # first: the stamp a chunk read now would get
        sock = self._sock
        assert sock is not None
        append = self._errors.append
        while True:
            try:
                data = sock.recv(64)
            except OSError:  # drained (BlockingIOError) or the writer gone
                return
            if len(data) == 8:
                append(now - _UNPACK(data)[0])

    def stop(self) -> None:
        if self._sock is not None:
            self._read()  # the stamps waiting in the socket: the latest, often the latest read
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def errors_ms(self) -> np.ndarray:
        return np.asarray(self._errors, dtype=float) * 1000.0

