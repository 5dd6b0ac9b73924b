"""The agentic replay over `client.workers=N`: one scheduler, N client processes.

AIPerf's shape (one timing process issues credits, worker processes execute the requests):
the Replayer (its clock, idle caps, warmup barrier and body building) stays in the parent,
and `ClientPool` stands where its StreamingClient stood:

    async with ClientPool(settings, n) as client:
        rec = await client.send(spec)

Each request goes to the worker owning its lane (`spec.tags["lane"]` mod N, so a lane's
keep-alive connections stay in one process) over a socketpair, as a length-prefixed pickle;
the worker sends it on its own StreamingClient (uvloop, `harness.client.streaming.run_async`) and
replies with the whole RequestRecord. `time.perf_counter` is CLOCK_MONOTONIC, one clock for
every process on the host, so the records need no translation (harness/client/workers.py).

The hand-off is client queueing: a record's `issue_ts` is the parent's issue instant, and the
time from there to the worker's client issuing it is added to `queue_delay_s` (with a resend
after a stale pooled connection, `issue_ts` is the resend's, moved back by the hand-off).
Every record carries the index of the worker that sent it in `tags["client_worker"]` and the
hand-off itself (parent's issue -> the worker read the request) in `tags["client_handoff_s"]`.

Health: every worker runs its own HealthProbe over the phase, and so does the parent (its
event loop schedules and builds the bodies); the point's health is the worst process's
(`merge_health`), its requests in flight the parent's count, which sees every request.

A worker that exits mid-phase (killed, a bug) fails its in-flight requests with the reason
("client worker 1 exited with signal SIGKILL"); its lanes move to the workers left and the
point goes on, the exit named in the client's health reasons. With no worker left, every
request fails at once with the reason. Children ignore SIGINT: Ctrl-C is the parent's, and
leaving the pool (however it is left) stops them.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import socket
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.client.health import ClientHealth, HealthProbe
from harness.client.inflight import InflightAccount
from harness.client.pool_worker import Channel, failed_record, worker_main
from harness.client.streaming import ClientSettings, StreamingClient
from harness.client.workers import WorkerError, merge_health, process_context
from harness.records import RequestRecord, RequestSpec

_START_TIMEOUT_S = 120.0  # forked from the forkserver: milliseconds, unless the host is swamped
_STOP_TIMEOUT_S = 5.0  # a worker told to close has this long before it is terminated
_REAP_S = 2.0  # how long an exited worker's exit code is waited for, to name it
# Asked of each end (the kernel caps it at net.core.wmem_max): a whole AgentX body in one
# write, where the default 208 KB took a loop pass on each side per 208 KB.
_SOCKET_BUFFER = 4 << 20
_ANSWER_MARGIN_S = 60.0  # beyond client.timeout_s: a worker that has not answered is stuck


@dataclass
class _Worker:
    index: int
    process: Any
    channel: Channel | None = None
    pid: int = 0
    ready: asyncio.Future[None] | None = None
    health: asyncio.Future[ClientHealth | None] | None = None
    # seq -> (spec, parent's issue instant, the reply's future)
    pending: dict[int, tuple[RequestSpec, float, asyncio.Future[RequestRecord]]] = field(
        default_factory=dict)
    fatal: str = ""  # a worker's own account of its failure
    exit_reason: str = ""  # set once it exited: its requests fail with this
    alive: bool = True


def exit_reason(index: int, exitcode: int | None, fatal: str) -> str:
    """How a client worker's exit is reported in its requests' errors and the point."""
    if fatal:
        last = fatal.strip().splitlines()[-1]
        return f"client worker {index} exited with an error: {last}"
    if exitcode is None:
        return f"client worker {index} exited (closed its channel; exit code not known)"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = str(-exitcode)
        return f"client worker {index} exited with signal {name}"
    return f"client worker {index} exited with code {exitcode}"


class ClientPool(InflightAccount):
    """N client worker processes behind StreamingClient's interface (send, health_probe and
    the in-flight accounting a HealthProbe reads)."""

    def __init__(self, settings: ClientSettings, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"a client pool needs at least one worker, not {workers}")
        self.settings = replace(settings, workers=1)  # each worker is one client
        self.n = workers
        self._workers: list[_Worker] = []
        self._seq = 0
        super().__init__()
        self.exits: list[str] = []  # workers that exited while the pool was open, and why
        self._reaping: set[asyncio.Task[None]] = set()  # held: the loop keeps weak references

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self._workers]

    # ---- start and stop ------------------------------------------------------------------
    async def __aenter__(self) -> ClientPool:
        loop = asyncio.get_running_loop()
        ctx = process_context()
        key = self.settings.api_key_env
        env = {key: os.environ[key]} if key and key in os.environ else {}
        try:
            for i in range(self.n):
                mine, theirs = socket.socketpair()
                for sock in (mine, theirs):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
                proc = ctx.Process(target=worker_main, args=(i, theirs, self.settings, env),
                                   daemon=True, name=f"client-worker-{i}")
                proc.start()
                theirs.close()
                w = _Worker(i, proc, ready=loop.create_future())
                self._workers.append(w)
                _, w.channel = await loop.create_unix_connection(
                    lambda w=w: Channel(lambda m: self._on_message(w, m),
                                         lambda: self._on_lost(w)), sock=mine)
            ready = [w.ready for w in self._workers if w.ready is not None]
            await asyncio.wait_for(asyncio.gather(*ready), _START_TIMEOUT_S)
        except BaseException:
            await self._stop(graceful=False)
            raise
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        await self._stop(graceful=exc_type is None)

    async def _stop(self, graceful: bool) -> None:
        """Close every worker: asked (a clean exit), then terminated if it does not go."""
        for w in self._workers:
            w.alive = False  # an exit from here on is ours, not a failure
            if w.channel is not None:
                if graceful:
                    w.channel.write(("close",))
                else:
                    w.channel.close()
        deadline = time.perf_counter() + (_STOP_TIMEOUT_S if graceful else 0.0)
        while (any(w.process.is_alive() for w in self._workers)
               and time.perf_counter() < deadline):
            await asyncio.sleep(0.01)
        for w in self._workers:
            if w.process.is_alive():
                w.process.terminate()
            w.process.join(_STOP_TIMEOUT_S)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            if w.channel is not None:
                w.channel.close()

    # ---- messages from the workers ------------------------------------------------------------
    def _on_message(self, w: _Worker, msg: Any) -> None:
        kind = msg[0]
        if kind == "rec":
            entry = w.pending.pop(msg[1], None)
            if entry is not None and not entry[2].done():
                entry[2].set_result(msg[2])
        elif kind == "health":
            if w.health is not None and not w.health.done():
                w.health.set_result(msg[1])
        elif kind == "ready":
            w.pid = msg[1]
            if w.ready is not None and not w.ready.done():
                w.ready.set_result(None)
        elif kind == "fatal":
            w.fatal = msg[1]

    def _on_lost(self, w: _Worker) -> None:
        if w.channel is not None:
            w.channel.closed = True
        if w.ready is not None and not w.ready.done():  # it died starting: the pool fails
            w.ready.set_exception(WorkerError(
                f"client worker {w.index} of {self.n} did not start:\n{w.fatal}".rstrip()))
        if w.alive:
            w.alive = False  # new requests go to the others from now on
            task = asyncio.get_running_loop().create_task(self._reap(w))
            self._reaping.add(task)
            task.add_done_callback(self._reaping.discard)
        elif w.health is not None and not w.health.done():
            w.health.set_result(None)

    async def _reap(self, w: _Worker) -> None:
        """Name the exit, then fail what the worker still held with that reason."""
        deadline = time.perf_counter() + _REAP_S
        while w.process.exitcode is None and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        w.exit_reason = exit_reason(w.index, w.process.exitcode, w.fatal)
        self.exits.append(f"{w.exit_reason} during the phase: its {len(w.pending)} requests "
                          "in flight failed and its lanes moved to the other workers")
        pending, w.pending = w.pending, {}
        for spec, issued, fut in pending.values():
            if not fut.done():
                rec = failed_record(spec, issued, w.exit_reason)
                rec.tags = {"client_worker": w.index}
                fut.set_result(rec)
        if w.health is not None and not w.health.done():
            w.health.set_result(None)

    # ---- requests -----------------------------------------------------------------------------
    def _owner(self, spec: RequestSpec) -> _Worker | None:
        """The lane's worker (lane mod N); the lane's next worker alive once it exited."""
        lane = spec.tags.get("lane")
        key = lane if isinstance(lane, int) else zlib.crc32(spec.request_id.encode())
        w = self._workers[key % self.n]
        if w.alive:
            return w
        alive = [x for x in self._workers if x.alive]
        return alive[key % len(alive)] if alive else None

    async def send(self, spec: RequestSpec) -> RequestRecord:
        """Send one request on its lane's worker; never raises for a worker's exit."""
        issued = time.perf_counter()
        w = self._owner(spec)
        if w is None or w.channel is None:
            gone = "; ".join(x.exit_reason for x in self._workers if x.exit_reason)
            return failed_record(spec, issued, f"no client worker left ({gone or 'closed'})")
        self._seq += 1
        seq = self._seq
        fut: asyncio.Future[RequestRecord] = asyncio.get_running_loop().create_future()
        w.pending[seq] = (spec, issued, fut)
        self._track(+1)
        try:
            # The tags stay here (the client only copies them onto the record): hash ids
            # and segments would cross twice for nothing.
            w.channel.write(("send", seq, issued, replace(spec, tags={})))
            await w.channel.drain()
            # A worker alive but stuck (stopped, deadlocked) must not hold the phase forever:
            # its client would have timed the request out by now.
            rec = await asyncio.wait_for(fut, self.settings.timeout_s + _ANSWER_MARGIN_S)
        except TimeoutError:
            rec = failed_record(spec, issued, f"client worker {w.index} did not answer within "
                                f"{self.settings.timeout_s + _ANSWER_MARGIN_S:g} s "
                                "(client.timeout_s + 60 s)")
            rec.tags = {"client_worker": w.index}
        finally:
            self._track(-1)
            w.pending.pop(seq, None)
        rec.tags = {**spec.tags, **rec.tags}
        # The parent's view for its own probe: queue delay with the hand-off; chunk stamps
        # are the workers' (their probes judge them), so none here.
        self._finished.append((rec.queue_delay_s, rec.send_ts, math.nan, math.nan))
        return rec

    # ---- health --------------------------------------------------------------------------------
    def health_probe(self) -> PoolProbe:
        return PoolProbe(self)

    def _broadcast(self, msg: tuple[Any, ...]) -> None:
        for w in self._workers:
            if w.alive and w.channel is not None:
                w.channel.write(msg)

    def _ask_health(self) -> list[asyncio.Future[ClientHealth | None]]:
        loop = asyncio.get_running_loop()
        out = []
        for w in self._workers:
            w.health = loop.create_future()
            if w.alive and w.channel is not None:
                w.channel.write(("probe_stop",))
            else:
                w.health.set_result(None)
            out.append(w.health)
        return out


class PoolProbe:
    """The phase's health over the pool: the parent's own probe and every worker's."""

    def __init__(self, pool: ClientPool) -> None:
        s = pool.settings
        self.pool = pool
        self.own = HealthProbe(pool, s.max_stamp_err_ms, s.max_cpu_share, s.max_queue_delay_ms,
                               s.max_stall_share)

    def start(self) -> None:
        self.own.start()
        self.pool._broadcast(("probe_start",))

    async def stop(self) -> ClientHealth:
        asked = self.pool._ask_health()
        own = await self.own.stop()
        parts = await asyncio.gather(*asked)
        return pool_health(own, parts, self.pool.exits)


def pool_health(own: ClientHealth, workers: Sequence[ClientHealth | None],
                exits: Sequence[str]) -> ClientHealth:
    """Judged by the worst process (merge_health), the scheduler's included; in flight is the
    parent's count, which sees each request from its issue to its record; a worker's exit is
    one of the reasons the client is flagged."""
    parts = [own, *(h for h in workers if h is not None)]
    names = ["scheduler process", *(f"client worker {i}" for i, h in enumerate(workers)
                                    if h is not None)]
    h = merge_health(parts, names)
    h.inflight_mean = own.inflight_mean
    h.reasons += list(exits)
    h.bottleneck = bool(h.reasons)
    return h


def open_client(settings: ClientSettings) -> StreamingClient | ClientPool:
    """The agentic replay's client: in-process as ever for one worker, a pool for more."""
    return ClientPool(settings, settings.workers) if settings.workers > 1 else StreamingClient(
        settings)
