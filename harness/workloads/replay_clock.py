"""The replay's timers and its two idle caps (docs/replay.md, "Idle").

Every wait of the replay (a turn's pacing delay, a sub-agent's dispatch offset, a lane's
start offset) is a timer here, owned by one session tree. Two watchdogs move timers forward,
never individually, always a whole set by one amount so order and spacing stay as recorded:

- system idle: when nothing is in flight anywhere for `idle_cap_s`, every pending timer moves
  forward by the same amount so the earliest fires now (AIPerf's `enforce_system_idle_cap`,
  10 s, locked by `--scenario inferencex-agentx-mvp`);
- tree idle: when one tree has nothing in flight for `tree_cap_s`, that tree's timers move
  forward together so its earliest fires now (`ReplayBarrierCoordinator`,
  `--trace-idle-gap-cap-seconds 300` in InferenceX; ai-dynamo/aiperf:src/aiperf/timing/
  replay_dependencies.py@a023f2fdb853dbade298a882d9f242f00541de2b).

If a timer moved forward fires into a wait that sends nothing (a join still waiting), the same
scope is still idle and expired, so its next timer is pulled in at once, as upstream re-arms its
watchdog with delay 0. Caps are off until `activate()` (after the warmup), as upstream's.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field


class _Timer:
    __slots__ = ("due", "fut", "handle", "tree")

    def __init__(self, due: float, tree: str, fut: asyncio.Future[bool]) -> None:
        self.due, self.tree, self.fut = due, tree, fut
        self.handle: asyncio.TimerHandle | None = None

    def fired(self) -> bool:
        """Fired, and the turn it woke has not run yet (it leaves the clock's set when it
        does). uvloop runs a timer due within 0.5 ms from its ready queue and the woken task
        only on the next pass, so a shift or a question can fall in between: such a timer
        is still due (now), or its turn would be missed as neither waiting nor in flight."""
        return self.fut.done() and not self.fut.cancelled() and self.fut.result()


@dataclass
class Jumps:
    """How often, and by how much, a cap moved timers forward (AIPerf logs the same)."""

    system: int = 0
    system_s: float = 0.0
    tree: int = 0
    tree_s: float = 0.0
    shifts: list[tuple[str, float, int]] = field(default_factory=list)  # scope, s, timers
    at: list[float] = field(default_factory=list)  # when each shift was made (perf_counter)

    def add(self, scope: str, by: float, timers: int, at: float) -> None:
        self.shifts.append((scope, by, timers))
        self.at.append(at)
        if scope == "system":
            self.system += 1
            self.system_s += by
        else:
            self.tree += 1
            self.tree_s += by

    @staticmethod
    def merged(parts: list[Jumps]) -> Jumps:
        """Several processes' shifts as one record, in the order they were made."""
        out = Jumps()
        rows = sorted((at, sh) for p in parts for at, sh in zip(p.at, p.shifts, strict=True))
        for at, (scope, by, n) in rows:
            out.add(scope, by, n, at)
        return out


class ReplayClock:
    def __init__(self, idle_cap_s: float, tree_cap_s: float) -> None:
        self.idle_cap_s, self.tree_cap_s = idle_cap_s, tree_cap_s
        self.deadline = math.inf
        self.active = False
        self.inflight = 0
        self.jumps = Jumps()
        self._timers: set[_Timer] = set()
        self._tree_inflight: dict[str, int] = defaultdict(int)
        self._tree_dog: dict[str, asyncio.TimerHandle] = {}
        self._tree_expired: set[str] = set()
        self._sys_dog: asyncio.TimerHandle | None = None
        self._sys_expired = False
        self._end: asyncio.TimerHandle | None = None

    # ---- timers ---------------------------------------------------------------------
    async def sleep_until(self, due: float, tree: str) -> bool:
        """Wait until `due` (perf_counter seconds), or less when a cap pulls it in. False:
        the deadline came first."""
        return await self._wait(due, tree) is not None

    async def wake_before(self, due: float, tree: str, lead: float) -> float | None:
        """Wait until `lead` seconds before `due`, and say when `due` is now: earlier by as
        much as a cap pulled this wait in. None: the deadline came first. (A turn's body is
        built in that lead, harness/workloads/replay.py.)"""
        t = await self._wait(due - lead, tree)
        return None if t is None else t.due + lead

    async def _wait(self, due: float, tree: str) -> _Timer | None:
        if time.perf_counter() >= self.deadline:
            return None
        loop = asyncio.get_running_loop()
        t = _Timer(due, tree, loop.create_future())
        self._timers.add(t)
        self._arm(t)
        if self._system_expired() or tree in self._tree_expired:
            loop.call_soon(self._recheck, tree)
        try:
            return t if await t.fut else None
        finally:
            self._timers.discard(t)
            if t.handle is not None:
                t.handle.cancel()

    def _arm(self, t: _Timer) -> None:
        if t.handle is not None:
            t.handle.cancel()
        t.handle = asyncio.get_running_loop().call_later(
            max(0.0, t.due - time.perf_counter()), self._fire, t)

    def _fire(self, t: _Timer) -> None:
        if not t.fut.done():
            t.fut.set_result(True)
            if self._system_expired() or t.tree in self._tree_expired:
                # what it woke may send nothing (a join): then pull the next one in
                asyncio.get_running_loop().call_soon(self._recheck, t.tree)

    def pending(self) -> tuple[float, int]:
        """(the earliest due, how many) of the timers still waiting, a fired one whose turn
        has not run counted as due now (_Timer.fired)."""
        now = time.perf_counter()
        dues = [t.due if not t.fut.done() else min(t.due, now)
                for t in self._timers if not t.fut.done() or t.fired()]
        return min(dues, default=math.inf), len(dues)

    def move(self, by: float) -> int:
        """Every waiting timer `by` seconds earlier (a system shift decided elsewhere)."""
        pending = [t for t in self._timers if not t.fut.done()]
        for t in pending:
            t.due -= by
            self._arm(t)
        return len(pending)

    def _shift(self, timers: list[_Timer], scope: str) -> None:
        woken = next((t for t in timers if t.fired()), None)
        if woken is not None:
            # a turn woken and not yet run may send: no shift now; look again once it ran
            # (queued after it), as when a moved timer wakes a turn that sends nothing
            asyncio.get_running_loop().call_soon(self._recheck, woken.tree)
            return
        pending = [t for t in timers if not t.fut.done()]
        if not pending:
            return
        now = time.perf_counter()
        by = min(t.due for t in pending) - now
        if by <= 0:
            return
        for t in pending:
            t.due -= by
            self._arm(t)
        self.jumps.add(scope, by, len(pending), now)

    def _recheck(self, tree: str) -> None:
        if self._system_expired():
            self._system_recheck()
        if tree in self._tree_expired and self._tree_inflight[tree] == 0:
            self._shift([t for t in self._timers if t.tree == tree], tree)

    # ---- what is in flight -------------------------------------------------------------
    def started(self, tree: str) -> None:
        self.inflight += 1
        self._tree_inflight[tree] += 1
        self._system_busy()
        self._tree_expired.discard(tree)
        dog = self._tree_dog.pop(tree, None)
        if dog is not None:
            dog.cancel()

    def finished(self, tree: str) -> None:
        self.inflight -= 1
        self._tree_inflight[tree] -= 1
        idle = self._system_done()
        if self.active and self._tree_inflight[tree] == 0:
            self.tree_idle(tree)
        if self.active and idle:
            self._system_idle()

    def tree_idle(self, tree: str) -> None:
        """The tree has nothing in flight from now (also: a tree idle when caps activate)."""
        if not self.active or self._tree_inflight[tree] > 0 or not math.isfinite(self.tree_cap_s):
            return
        dog = self._tree_dog.pop(tree, None)
        if dog is not None:
            dog.cancel()
        self._tree_dog[tree] = asyncio.get_running_loop().call_later(
            self.tree_cap_s, self._tree_expire, tree)

    def tree_closed(self, tree: str) -> None:
        dog = self._tree_dog.pop(tree, None)
        if dog is not None:
            dog.cancel()
        self._tree_expired.discard(tree)
        self._tree_inflight.pop(tree, None)

    def _tree_expire(self, tree: str) -> None:
        self._tree_dog.pop(tree, None)
        if self._tree_inflight[tree] == 0:
            self._tree_expired.add(tree)
            self._shift([t for t in self._timers if t.tree == tree], tree)

    # ---- the system cap: this process's own (harness.workloads.replay_split shares it) ----------
    def _system_busy(self) -> None:
        self._sys_expired = False
        if self._sys_dog is not None:
            self._sys_dog.cancel()
            self._sys_dog = None

    def _system_done(self) -> bool:
        """A request ended: is nothing in flight anywhere now?"""
        return self.inflight == 0

    def _system_idle(self) -> None:
        self._arm_system()

    def _system_expired(self) -> bool:
        return self._sys_expired

    def _system_recheck(self) -> None:
        if self.inflight == 0:
            self._shift(list(self._timers), "system")

    def _arm_system(self) -> None:
        if self._sys_dog is not None:
            self._sys_dog.cancel()
            self._sys_dog = None
        if not math.isfinite(self.idle_cap_s):  # no system cap
            return
        self._sys_dog = asyncio.get_running_loop().call_later(self.idle_cap_s, self._sys_expire)

    def _sys_expire(self) -> None:
        self._sys_dog = None
        if self.inflight == 0:
            self._sys_expired = True
            self._shift(list(self._timers), "system")

    # ---- phases -------------------------------------------------------------------------
    def activate(self, trees: list[str], deadline: float) -> None:
        """Caps on (the profiling phase began) and the deadline set: timers due after it
        return False at it, and nothing new waits."""
        self.active = True
        self.deadline = deadline
        loop = asyncio.get_running_loop()
        self._end = loop.call_later(max(0.0, deadline - time.perf_counter()), self._at_deadline)
        for tr in trees:
            self.tree_idle(tr)
        if self.inflight == 0:
            self._system_idle()

    def _at_deadline(self) -> None:
        for t in list(self._timers):
            if not t.fut.done():
                t.fut.set_result(False)

    def close(self) -> None:
        for h in [self._sys_dog, self._end, *self._tree_dog.values()]:
            if h is not None:
                h.cancel()
        self._tree_dog.clear()
