"""Ctrl-C and SIGTERM that are never lost.

Python turns SIGINT into KeyboardInterrupt wherever the main thread is; when that is inside an
extension module's own code during start-up (an import that runs Python through the C API, a
library's bare `except:`), the exception can be swallowed and the sweep would run on. So while
the harness starts, the handler also records the request, and the runner checks it between
steps. Inside the import machinery it only records it: raised there (in a module lock's weakref
callback) it is printed as "Exception ignored" and dropped. Before any event loop runs the
default handler is back: asyncio's runner turns Ctrl-C into a clean cancellation only under the
default handler.

SIGTERM (`harness.cli.main._terminate`, a scheduler's cancel) raises SystemExit where the main
thread is, and no runner catches it for us. While a point is measured the main thread is
mostly inside uvloop's transport callbacks (`protocol.data_received`), and uvloop wraps those
in `except BaseException` (uvloop/handles/stream.pyx `__uv_stream_on_read_impl` ->
`_fatal_error` -> `call_exception_handler`): the exception closes one connection, is logged
and dropped, and the sweep runs to its end with exit 0. So guard_sigterm() wraps the handler:
it records the request; with an event loop running it raises from a callback of that loop's
own (a handle's SystemExit stops the loop and comes out of run_until_complete, cancelling the
point's tasks), never from whatever callback the signal happened to land in; and check()
raises it between steps should it still have been swallowed."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

_requested = threading.Event()
_terminated = threading.Event()
_raise_sigterm: Callable[[int, FrameType | None], Any] | None = None  # the wrapped handler
_pending: set[int] = set()  # id() of each loop a raise is scheduled on, not yet run


def _in_import(frame: FrameType | None) -> bool:
    return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _requested.set()
    if _in_import(frame):
        return  # recorded only: the runner's next check() raises it (module docstring)
    raise KeyboardInterrupt


def install() -> None:
    """Take over SIGINT, unless it was ignored when we started (a backgrounded job)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def restore() -> None:
    """Give SIGINT back to Python's default handler (if we took it), then check."""
    if signal.getsignal(signal.SIGINT) is _on_sigint:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    check()


def _raise_terminated() -> None:
    if _raise_sigterm is not None:
        _raise_sigterm(signal.SIGTERM, None)


def _raise_in_loop(loop_id: int) -> None:
    _pending.discard(loop_id)
    _raise_terminated()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _terminated.set()
    loop = asyncio._get_running_loop()
    if loop is not None:
        # raised by the loop itself (module docstring); the write wakes a loop that sleeps.
        # Once per loop: a second raise queued behind the first would cut short the
        # cancellation of the point's tasks that the first one starts.
        if id(loop) not in _pending:
            _pending.add(id(loop))
            loop.call_soon_threadsafe(_raise_in_loop, id(loop))
        return
    if _in_import(frame):
        return  # recorded only, as for SIGINT
    _raise_terminated()


def guard_sigterm() -> None:
    """Wrap the SIGTERM handler the command installed (one that raises), as the module
    docstring says; a default or ignored SIGTERM is left alone."""
    global _raise_sigterm
    current = signal.getsignal(signal.SIGTERM)
    if current is _on_sigterm or not callable(current):
        return
    _raise_sigterm = current
    signal.signal(signal.SIGTERM, _on_sigterm)


def check() -> None:
    """Raise what a SIGTERM's handler raises, or KeyboardInterrupt, if one arrived and was
    swallowed somewhere since."""
    if _terminated.is_set():
        _raise_terminated()
    if _requested.is_set():
        raise KeyboardInterrupt
