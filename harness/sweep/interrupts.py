"""Ctrl-C that is never lost. Python turns SIGINT into KeyboardInterrupt wherever the main
thread is; when that is inside an extension module's own code during start-up (an import that
runs Python through the C API, a library's bare `except:`), the exception can be swallowed and
the sweep would run on. So while the harness starts, the handler also records the request, and
the runner checks it between steps. Inside the import machinery it only records it: raised
there (in a module lock's weakref callback) it is printed as "Exception ignored" and dropped.
Before any event loop runs the default handler is back: asyncio's runner turns Ctrl-C into a
clean cancellation only under the default handler."""

from __future__ import annotations

import signal
import threading
from types import FrameType

_requested = threading.Event()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _requested.set()
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
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


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C arrived and was swallowed somewhere since."""
    if _requested.is_set():
        raise KeyboardInterrupt
