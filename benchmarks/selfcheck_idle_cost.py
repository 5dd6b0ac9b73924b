"""What the client's self-check costs an idle event loop: its wake-ups.

At one SSE event per write and c64 the harness client sits idle most of the time (~0.3 of a
core), so every wake-up its self-check adds lands on a sleeping loop. What such a wake-up costs
depends on the host: on the 2-core VM this project is measured on, a bare epoll timeout cost
30-50 us of process CPU, against ~1 us of Python work. This script prints, for an otherwise idle
uvloop loop pinned to one core: CPU milliseconds a second and microseconds a wake-up for a bare
`epoll.poll` timeout every 5 ms (the host's own cost), the health probe's 5 ms lag timer
(harness.client.health), the stamp probe (harness.client.stamp_probe, ~500 datagrams a second
from its writer on another core) and the whole HealthProbe (both, and the pass meter, which
costs nothing while no read arrives). docs/client.md, "What the self-check's wake-ups cost".

Run: python benchmarks/selfcheck_idle_cost.py [--seconds 3] [--rounds 2]
Last line, for scripts: `selfcheck_idle epoll_us=.. timer_ms_s=.. stamp_ms_s=.. health_ms_s=..`
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import time

import numpy as np
import uvloop

from harness.client.health import HealthProbe
from harness.client.stamp_probe import StampProbe


class _NoRequests:
    """The in-flight meter a HealthProbe reads: nothing in flight here."""

    def reset_inflight_area(self) -> None:
        pass

    def inflight_area(self) -> float:
        return 0.0


def _epoll(seconds: float) -> tuple[float, float]:
    """(CPU ms a second, us a wake-up) of a bare epoll timeout every 5 ms."""
    ep, n = select.epoll(), 0
    c0, w0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - w0 < seconds:
        ep.poll(0.005)
        n += 1
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return cpu / wall * 1000.0, cpu / max(n, 1) * 1e6


async def _idle(kind: str, seconds: float) -> float:
    """CPU ms a second of an idle loop running `kind` of the self-check."""
    health = HealthProbe(_NoRequests()) if kind == "health" else None
    stamps = StampProbe() if kind == "stamp" else None
    if health is not None:
        health.start()
    elif stamps is not None:
        stamps.start()
    timer = HealthProbe(_NoRequests()) if kind == "timer" else None
    if timer is not None:  # the lag timer alone: start its chain without the other parts
        timer._loop = asyncio.get_running_loop()
        timer._wake(time.perf_counter())
    await asyncio.sleep(0.2)  # the writer process started, the first wake-ups past
    c0, w0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    if health is not None:
        await health.stop()
    if stamps is not None:
        stamps.stop()
    if timer is not None and timer._timer is not None:
        timer._timer.cancel()
    return cpu / wall * 1000.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[0]})  # the stamp writer then runs on the others
    rows: dict[str, list[float]] = {k: [] for k in ("none", "timer", "stamp", "health")}
    epoll_us: list[float] = []
    print(f"{'round':>5} {'epoll ms/s':>10} {'us/wake':>8}" + "".join(f" {k + ' ms/s':>12}"
                                                                    for k in rows))
    for r in range(a.rounds):
        ms, us = _epoll(a.seconds)
        epoll_us.append(us)
        for k in rows:
            rows[k].append(uvloop.run(_idle(k, a.seconds)))
        print(f"{r:>5} {ms:>10.2f} {us:>8.1f}" + "".join(f" {v[-1]:>12.2f}"
                                                         for v in rows.values()), flush=True)
    med = {k: float(np.median(v)) for k, v in rows.items()}
    print(f"per wake-up (medians): timer {med['timer'] / 0.2:.0f} us (200 a second), stamp probe "
          f"{med['stamp'] / 0.5:.0f} us (~500 a second)")
    print(f"selfcheck_idle epoll_us={np.median(epoll_us):.1f} timer_ms_s={med['timer']:.2f} "
          f"stamp_ms_s={med['stamp']:.2f} health_ms_s={med['health']:.2f}")


if __name__ == "__main__":
    main()
