"""A worker process of harness.workloads.replay_split: the Replayer over its share of the
lanes, with the parts that span processes behind its hooks: the trace sampler's shared
cursor (SharedSampler), the system idle cap's shared in-flight count with the parent's
shifts (SharedClock), and the barriers as messages to the parent (ReplaySync). Messages on
the channel (harness.client.pool_worker.Channel), up: ("top", lead), ("drained", least),
("idle", since), ("recheck",), ("min", qid, earliest, timers), ("done", part),
("fatal", traceback); down: ("begin", top), ("start", t0, least, wall), ("mins", qid),
("shift", by), ("close",).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.client.health import ClientHealth
from harness.client.pool_worker import Channel
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.workloads.agentic_bodies import AgenticBodies
from harness.workloads.prompts import BlockPrompts
from harness.workloads.replay import Replayer
from harness.workloads.replay_clock import ReplayClock
from harness.workloads.replay_result import ReplayResult
from harness.workloads.replay_sessions import TraceSampler
from harness.workloads.replay_settings import ReplaySettings
from harness.workloads.traces.model import Trace

BUSY, STARTS, EXPIRED, CURSOR = range(4)  # the shared array's slots


class SharedSampler(TraceSampler):
    """Lane i's first trace is i mod n under either rule (as TraceSampler's); `shared`
    recycles draw from one cursor over every process, starting after the lanes' first draws."""

    def __init__(self, n_traces: int, rule: str, shared: Any, lock: Any) -> None:
        super().__init__(n_traces, rule)
        self._shared, self._lock = shared, lock

    def first(self, lane: int) -> int:
        self.drawn.append(lane % self.n)
        return lane % self.n

    def recycle(self, current: int) -> int:
        if self.rule != "shared":
            return super().recycle(current)
        with self._lock:
            i = self._shared[CURSOR]
            self._shared[CURSOR] = i + 1
        self.drawn.append(i % self.n)
        return i % self.n


class SharedClock(ReplayClock):
    """This process's timers and tree caps; the system cap over every process: its in-flight
    count is shared, and the parent decides each system shift (module docstring)."""

    def __init__(self, idle_cap_s: float, tree_cap_s: float, shared: Any, lock: Any,
                 tell: Callable[[tuple[Any, ...]], None]) -> None:
        super().__init__(idle_cap_s, tree_cap_s)
        self._shared, self._lock, self._tell = shared, lock, tell

    def _system_busy(self) -> None:
        with self._lock:
            self._shared[BUSY] += 1
            self._shared[STARTS] += 1
            self._shared[EXPIRED] = 0

    def _system_done(self) -> bool:
        with self._lock:
            self._shared[BUSY] -= 1
            return self._shared[BUSY] == 0

    def _system_idle(self) -> None:
        if math.isfinite(self.idle_cap_s):
            self._tell(("idle", time.perf_counter()))

    def _system_expired(self) -> bool:
        return bool(self._shared[EXPIRED])

    def _system_recheck(self) -> None:
        if self._shared[BUSY] == 0:
            self._tell(("recheck",))


# ---- a worker process ---------------------------------------------------------------------
@dataclass
class LanesJob:
    """What a worker process needs to replay its lanes (pickled to it once)."""

    settings: ClientSettings
    traces: list[Trace]
    lanes: int
    lane_ids: list[int]
    replay: ReplaySettings
    prompts: BlockPrompts
    body: dict[str, Any]
    overhead: int
    cache_bust: str
    max_tokens_field: str
    seed: int
    salt_prefix: str


class _WorkerSync:
    """ReplaySync over the channel: each barrier is a message up and the parent's answer."""

    def __init__(self, chan: Channel, on_start: Callable[[], None]) -> None:
        self.chan, self.on_start = chan, on_start
        self.answer: asyncio.Future[tuple[Any, ...]] | None = None

    async def _ask(self, msg: tuple[Any, ...]) -> tuple[Any, ...]:
        self.answer = asyncio.get_running_loop().create_future()
        self.chan.write(msg)
        return await self.answer

    async def top(self, lead: float) -> float:
        return (await self._ask(("top", lead)))[1]

    async def drained(self, least: float) -> tuple[float, float, float]:
        _, t0, least_all, wall = await self._ask(("drained", least))
        self.on_start()
        return t0, least_all, wall


def lanes_worker(index: int, sock: socket.socket, job: LanesJob, shared: Any, lock: Any,
                 env: dict[str, str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it stops us
    os.environ.update(env)
    run_async(_serve(index, sock, job, shared, lock))


async def _serve(index: int, sock: socket.socket, job: LanesJob, shared: Any, lock: Any
                 ) -> None:
    loop = asyncio.get_running_loop()
    closed: asyncio.Future[None] = loop.create_future()
    inbox: list[Callable[[Any], None]] = []

    def lost() -> None:
        if not closed.done():
            closed.set_result(None)

    _, chan = await loop.create_unix_connection(
        lambda: Channel(lambda m: inbox[0](m) if inbox else None, lost), sock=sock)
    try:
        async with StreamingClient(job.settings) as client:
            probe = client.health_probe()
            sync = _WorkerSync(chan, probe.start)
            clock = SharedClock(job.replay.idle_cap_s, job.replay.tree_cap_s, shared, lock,
                                chan.write)
            bodies = AgenticBodies(job.prompts, job.body, job.overhead, job.replay.api,
                                   cache_bust=job.cache_bust,
                                   max_tokens_field=job.max_tokens_field)
            replayer = Replayer(client, job.traces, job.lanes, job.replay, bodies, job.seed,
                                lambda rec: rec.tags.__setitem__("client_worker", index),
                                salt_prefix=job.salt_prefix, lane_ids=job.lane_ids,
                                sampler=SharedSampler(len(job.traces), job.replay.recycle,
                                                      shared, lock),
                                clock=clock, sync=sync)
            inbox.append(lambda m: _on_message(m, sync, clock, chan, lost))
            run = asyncio.ensure_future(replayer.run())
            await asyncio.wait([run, closed], return_when=asyncio.FIRST_COMPLETED)
            if not run.done():  # the parent gave up on the point (another process failed)
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
                return
            result = run.result()
            health = await probe.stop()
            chan.write(("done", Part(result, health, index)))
            await closed  # answers the parent's queries (no timers left) until it closes
    except Exception:  # the parent must hear why
        chan.write(("fatal", traceback.format_exc()))
        await chan.drain()
    finally:
        chan.close()


def _on_message(msg: Any, sync: _WorkerSync, clock: ReplayClock, chan: Channel,
                close: Callable[[], None]) -> None:
    kind = msg[0]
    if kind in ("begin", "start"):
        if sync.answer is not None and not sync.answer.done():
            sync.answer.set_result(msg)
    elif kind == "mins":
        chan.write(("min", msg[1], *clock.pending()))
    elif kind == "shift":
        clock.move(msg[1])
    elif kind == "close":
        close()


@dataclass
class Part:
    result: ReplayResult
    health: ClientHealth
    index: int
