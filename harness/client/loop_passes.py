"""How long a read waits behind the other reads of its event-loop pass.

An engine writes every stream after each decode step, so the client's poll returns a burst of
ready sockets and handles them one after another: the last read of a pass is stamped after the
work on all the others (and on any request that finished or started among them). Every byte
read in a pass had arrived before the poll returned, so a read's offset from the pass's first
read is time its bytes certainly waited. The stamp probe (harness.client.stamp_probe) samples the
other part, arrival to the start of a pass, at random instants; neither sees the other's part,
so the client's stamp-error bound adds them (harness.client.health.stamp_error_bound).

Counted per read in the push path (harness.client.arrival), into a fixed histogram: one increment a
read, no list that grows with the phase. A pass ends when a callback scheduled at its first
read runs: asyncio and uvloop run it after the pass's I/O callbacks, before the next poll.
"""

from __future__ import annotations

import asyncio
import contextvars
import math

import numpy as np

from harness.client.read_state import MeterState

_BINS_PER_S = 50_000.0  # 20 us bins: fine beside a 1 ms threshold
_BINS = 50_000  # up to 1 s; longer offsets are kept exactly (rare, and the point is lost then)
# PassMeter.read inlines them, and so does the compiled read (_fastread_state.c `bump`).
assert (_BINS_PER_S, _BINS) == (50_000.0, 50_000), "PassMeter.read and _fastread inline them"


class PassMeter(MeterState):
    """Histogram of every read's offset from the first read of its pass, while active.

    Its fields are MeterState's (harness.client.read_state): the compiled read of the httptools
    transport counts a read of an open pass into them as `read` does."""

    __slots__ = ()  # no __init__: MeterState starts it stopped, with empty lists

    def start(self) -> None:
        """Count from now, in the running loop."""
        self._loop = asyncio.get_running_loop()
        # The context every pass's _close runs in: given one, call_soon does not copy the
        # current context for each pass (an allocation; c64 at one event per write holds
        # 15-28 k passes a second, most of one or two reads). Scheduled in bulk a call_soon
        # took 0.47 us with it against 0.84 without; in a loop of one-read passes the
        # difference was within the noise (0.03-0.15 us of a ~2 us pass).
        self._ctx = contextvars.copy_context()
        self._open = False
        self.hist = [0] * _BINS
        self.over = []

    def stop(self) -> None:
        self._loop = None
        self._open = False  # read() counts only in an open pass

    def read(self, t: float) -> None:
        """One read stamped t (perf_counter)."""
        if self._open:  # every read of a pass but its first: the per-read cost is this branch
            i = int((t - self._t0) * 50000.0)  # _BINS_PER_S, a literal: no global lookup
            if i < 50000:  # _BINS
                self.hist[i] += 1
            else:
                self.over.append(t - self._t0)
            return
        if self._loop is None:  # stopped (stop() closes the pass)
            return
        self._open, self._t0 = True, t
        self._loop.call_soon(self._close, context=self._ctx)
        self.hist[0] += 1

    def reads(self) -> int:
        return sum(self.hist) + len(self.over)

    def quantile_ms(self, q: float) -> float:
        """The q-quantile of the reads' offsets, in ms (each bin read at its upper edge)."""
        return self.quantiles_ms([q])[0]

    def quantiles_ms(self, qs: list[float]) -> list[float]:
        """quantile_ms for each of qs, the histogram summed once."""
        n = self.reads()
        if n == 0:
            return [math.nan] * len(qs)
        cum = np.cumsum(np.asarray(self.hist, dtype=np.int64))
        rest = sorted(self.over)
        out = []
        for q in qs:
            rank = q * n
            i = int(np.searchsorted(cum, rank))
            if i < _BINS:
                out.append((i + 1) / _BINS_PER_S * 1000.0)
            else:
                k = min(int(rank - cum[-1]), len(rest) - 1)
                out.append(rest[max(k, 0)] * 1000.0)
        return out


PASSES = PassMeter()  # the process's one meter (one client event loop per process)
