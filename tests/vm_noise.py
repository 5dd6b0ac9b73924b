"""A control for timing tests: how late this machine wakes a process that does nothing else.

When the OS or the hypervisor is slow to run a sleeping process, no client can stamp arrivals
closer than that; a timing test that falls short can then tell the machine's noise from the
client's error by this independent reading.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Sleeps 1 ms at a time in select() until stdin is readable, then prints how late it woke.
_PROBE = r"""
import json, select, sys, time
lags = []
while True:
    t = time.perf_counter()
    ready, _, _ = select.select([sys.stdin], [], [], 0.001)
    if ready:
        break
    lags.append(time.perf_counter() - t - 0.001)
lags = sorted(lags) or [0.0]
print(json.dumps({"wakeups": len(lags), "p99_ms": 1000 * lags[int(0.99 * (len(lags) - 1))],
                  "max_ms": 1000 * lags[-1]}))
"""


@contextmanager
def wakeup_lateness() -> Iterator[dict[str, float]]:
    """Measure, in a separate idle process, how late 1 ms sleeps wake while the block runs."""
    proc = subprocess.Popen([sys.executable, "-c", _PROBE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    reading: dict[str, float] = {}
    try:
        yield reading
    finally:
        out, _ = proc.communicate("stop\n", timeout=30)
        reading.update(json.loads(out))
