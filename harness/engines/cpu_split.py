"""Which cores a CPU engine computes on, and which the client keeps.

A CPU engine that spins on every core starves the client of the core it stamps arrivals on:
`make run` with llama.cpp on all cores of a 2-core host left 2 of 11 points invalid (queue delay
and stamp error over their bounds). So a CPU engine gets `engine.threads` cores and
the client the rest, disjoint where the OS lets us pin (docs/architecture.md, README "The
embedded engine"). `engine.threads`: -1 (default for llama.cpp and vLLM on the CPU) every core
but the first, which the client keeps; N > 0 the last N cores; null every core, unpinned.
"""

from __future__ import annotations

import contextlib
import os


def available_cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        return list(range(os.cpu_count() or 1))


def engine_cores(threads: int | None, cores: list[int] | None = None) -> list[int] | None:
    """The cores the engine computes on; None when `threads` is null (the engine decides).
    On a one-core host the engine shares the only core (nothing else is possible)."""
    if threads is None:
        return None
    cores = available_cores() if cores is None else cores
    chosen = cores[1:] if threads < 0 else cores[-threads:]
    return chosen or cores


def client_cores(engine: list[int] | None, cores: list[int] | None = None) -> list[int] | None:
    """The cores left to the client: the complement of the engine's, or None when there is no
    complement (a null `threads`, or the engine asked for every core)."""
    if engine is None:
        return None
    cores = available_cores() if cores is None else cores
    rest = [c for c in cores if c not in engine]
    return rest or None


def pin(cores: list[int] | None) -> set[int] | None:
    """Pin this process to `cores`; returns the mask it had (to restore), None if unchanged."""
    if not cores or not hasattr(os, "sched_setaffinity"):
        return None
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, set(cores))
    except OSError:
        return None
    return before


def restore(mask: set[int] | None) -> None:
    if mask and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, mask)
