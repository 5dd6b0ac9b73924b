"""A system idle shift over lane processes (harness/workloads/replay_split.py, docs/replay.md
"Lanes over workers"), made deterministic: the parent's LanesCoordinator and two workers'
SharedClocks in one loop, linked by message queues whose delivery the test controls, so the
shift's race with a timer that has just fired in one process is hit every time, not once a
full suite.

What the race was: uvloop runs a timer due within half a millisecond from its ready queue, and
the turn it wakes only on the next pass, after a socket read. A "mins" question read in that
pass found no waiting timer in that process (the fired one no longer counted, its turn not yet
sent), so the parent, with nothing in flight, moved the other process's timers so their
earliest fired at once: lane b went right after lane a instead of its recorded 0.3 s later.
"""

from __future__ import annotations

import asyncio
import math
import time
from types import SimpleNamespace
from typing import Any

from harness.workloads.replay import BUILD_LEAD_S
from harness.workloads.replay_settings import ReplaySettings
from harness.workloads.replay_split import LanesCoordinator, _Proc
from harness.workloads.replay_split_worker import SharedClock, _on_message

CAP_S = 0.2  # the system idle cap
GAPS = (3.0, 3.3)  # lane a's and lane b's think times: 0.3 s apart, both far past the cap
BUSY_S = 0.4  # lane a's request: still in flight when lane b's turn is due


class _Link:
    """The parent's channel to one worker. A message reaches the worker a loop pass after it
    was written; with `hold_after_shift`, the first "mins" after a shift is held until the
    worker's clock next fires a timer and handed over just after, before the turn that timer
    woke has run: the pass uvloop gives it when the timer and the message meet (above)."""

    def __init__(self, clock: SharedClock, hold_after_shift: bool) -> None:
        self.clock, self.hold = clock, hold_after_shift
        self.shifted = False
        self.held: list[Any] = []
        fire = clock._fire

        def fire_then_deliver(t: Any) -> None:
            fire(t)
            held, self.held = self.held, []
            for msg in held:
                self.deliver(msg)

        clock._fire = fire_then_deliver  # type: ignore[method-assign]

    def deliver(self, msg: Any) -> None:
        _on_message(msg, None, self.clock, SimpleNamespace(write=self.clock._tell), lambda: None)

    def write(self, msg: Any) -> None:
        if msg[0] == "shift":
            self.shifted = True
        elif msg[0] == "mins" and self.hold and self.shifted:
            self.hold = False
            self.held.append(msg)
            return
        asyncio.get_running_loop().call_soon(self.deliver, msg)


async def _lane(clock: SharedClock, tree: str, wait: float, busy_s: float,
                sent: dict[str, float]) -> None:
    """One paced turn as harness.workloads.replay.Replayer._turn waits for it: wake
    BUILD_LEAD_S before it is due, sleep the rest, then the request is in flight."""
    due = await clock.wake_before(time.perf_counter() + wait, tree, BUILD_LEAD_S)
    assert due is not None and await clock.sleep_until(due, tree)
    clock.started(tree)
    sent[tree] = time.perf_counter()
    await asyncio.sleep(busy_s)
    clock.finished(tree)


def _shift_race(hold_after_shift: bool) -> tuple[dict[str, float], LanesCoordinator]:
    s = ReplaySettings(duration_s=10.0, idle_cap_s=CAP_S, tree_cap_s=math.inf)
    coord = LanesCoordinator([SimpleNamespace(lanes=2)] * 2, s)  # type: ignore[list-item]
    sent: dict[str, float] = {}

    async def go() -> None:
        clocks = []
        for i in range(2):
            p = _Proc(i, None)
            clock = SharedClock(s.idle_cap_s, s.tree_cap_s, coord.shared, coord.lock,
                                lambda m, p=p: coord._on_message(p, m))  # the parent is quick
            p.channel = _Link(clock, hold_after_shift and i == 0)  # type: ignore[assignment]
            coord.procs.append(p)
            clocks.append(clock)
        lanes = [asyncio.create_task(_lane(c, tr, gap, busy, sent))
                 for c, tr, gap, busy in zip(clocks, "ab", GAPS, (BUSY_S, 0.05), strict=True)]
        await asyncio.sleep(0)  # both wait now
        coord.active = True
        for c, tr in zip(clocks, "ab", strict=True):
            c.activate([tr], time.perf_counter() + s.duration_s)
        await asyncio.wait_for(asyncio.gather(*lanes), timeout=2.0)
        for c in clocks:
            c.close()
        if coord._idle is not None:
            coord._idle[1].cancel()

    asyncio.run(go())
    return sent, coord


def test_a_turn_woken_but_not_yet_run_holds_the_shift_for_every_process() -> None:
    sent, coord = _shift_race(hold_after_shift=True)
    spacing = sent["b"] - sent["a"]
    assert abs(spacing - (GAPS[1] - GAPS[0])) < 0.02, (spacing, coord.jumps.shifts)
    big = [by for scope, by, n in coord.jumps.shifts if by > 1]
    assert len(big) == 1 and abs(big[0] - (GAPS[0] - CAP_S - BUILD_LEAD_S)) < 0.05
    assert all(by < 0.02 for _, by, _ in coord.jumps.shifts if by <= 1)  # the build lead only


def test_the_link_alone_keeps_the_spacing() -> None:
    # the same replay with every message on time: what the held one must match
    sent, coord = _shift_race(hold_after_shift=False)
    assert abs(sent["b"] - sent["a"] - (GAPS[1] - GAPS[0])) < 0.02, coord.jumps.shifts
