"""Small helpers shared by tests that run the real CLI."""

from __future__ import annotations

import subprocess
import sys
import time


def harness(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def engine_pids() -> list[int]:
    """PIDs of embedded llama.cpp servers still running on this machine."""
    out = subprocess.run(["pgrep", "-f", "harness.engines.llamacpp_server"],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")
