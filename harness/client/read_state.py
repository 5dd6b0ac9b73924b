"""The state a read touches, and where it lives: C members of `harness.client._fastread`'s
types where that module is built, these pure-Python twins where it is not.

`_fastread` (a C extension built by `pip install`, optional: a host without a C compiler gets
these classes and the Python read path) takes the steady read of the httptools transport, one
whole chunk holding one whole event, without an interpreter frame (docs/client.md, "The
compiled read"). The state it shares with the Python code is declared here once, by name:
`ConnState` is the base of h1_conn._Conn, `FeedState` of sse.StreamAccumulator, `MeterState`
of loop_passes.PassMeter. Each twin below has the same attributes with the same defaults, so the
Python code reads and writes them alike over either.

`COMPILED` says which is in use; `HARNESS_READ_PATH=python` in the environment forces the twins
(a comparison, or a suspected fault in the C code).
"""

from __future__ import annotations

import os
from typing import Any

_FORCED_PYTHON = os.environ.get("HARNESS_READ_PATH", "") == "python"


class PyFeedState:
    """sse.StreamAccumulator's share: its reads' stamps and the reads past its head."""

    __slots__ = ("_pend", "_pend_len", "_steady", "read_ts")

    def __new__(cls, *args: Any, **kwargs: Any) -> PyFeedState:
        self = super().__new__(cls)
        self.read_ts: list[float] = []  # one stamp per read
        self._pend: list[bytes] = []  # reads past the head not yet checked and trimmed
        self._pend_len = 0
        # Past the head, not strict, the last read ended "\n": a read of exactly one
        # well-framed event then takes feed's first branch (the usual read at one event per
        # write).
        self._steady = False
        return self


class PyMeterState:
    """loop_passes.PassMeter's share: the open pass and the histogram a read counts into."""

    __slots__ = ("_ctx", "_loop", "_open", "_t0", "hist", "over")

    def __new__(cls, *args: Any, **kwargs: Any) -> PyMeterState:
        self = super().__new__(cls)
        self._loop: Any = None  # the running loop; None: stopped
        self._ctx: Any = None  # the context _close runs in; None: the loop copies the current
        self._open = False
        self._t0 = 0.0
        self.hist: list[int] = []  # a list: an increment costs a third of a numpy element's
        self.over: list[float] = []
        return self

    def _close(self) -> None:
        """End the open pass (scheduled at its first read: the loop runs it after the pass's
        I/O callbacks, before its next poll)."""
        self._open = False


class PyConnState:
    """h1_conn._Conn's share. With no compiled read, `data_received` is the Python one
    (`_Conn._read` called with no stamp stamps the read itself)."""

    __slots__ = ("_acc", "_any", "_boundary", "_chunk_cb", "_feed", "_meter", "_raw", "last")

    def __new__(cls, *args: Any, **kwargs: Any) -> PyConnState:
        self = super().__new__(cls)
        self._feed: Any = None  # the parser's feed_data; None: no reply is being read
        self._acc: Any = None
        self._raw: Any = None
        self._meter: Any = None
        self.last = 0.0  # the last read's stamp
        self._chunk_cb = 0  # set by the compiled on_chunk_* callbacks only
        self._boundary = False
        self._any = False
        return self


if _FORCED_PYTHON:
    COMPILED = False
    WHY = "HARNESS_READ_PATH=python"
else:
    try:
        from harness.client import _fastread
    except ImportError as exc:  # not built here (no C compiler at install time)
        COMPILED, WHY = False, f"harness.client._fastread not built ({exc})"
    else:
        COMPILED, WHY = True, ""

if COMPILED:
    FeedState: type = _fastread.FeedState
    MeterState: type = _fastread.MeterState
    ConnState: type = _fastread.ConnState
else:
    FeedState, MeterState, ConnState = PyFeedState, PyMeterState, PyConnState


def read_path() -> str:
    """What reads the httptools transport's steady stream here, for a run's provenance."""
    return "compiled" if COMPILED else f"python ({WHY})"
