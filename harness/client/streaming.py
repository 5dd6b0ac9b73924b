"""The streaming HTTP client: sends `RequestSpec`s, returns `RequestRecord`s, watches itself.

One aiohttp session per load phase. Each request is timed on `time.perf_counter()`; every socket
read is stamped as it is handed to us and fed to an `sse.StreamAccumulator` (no per-event work on
the hot path). Failed, timed-out and truncated requests come back as records with `error` set;
nothing is dropped, and every failure says why.

What the client accepts: uncompressed streams only (it asks for `identity`; a compressed reply
is a failure saying so), no redirects (a redirect would carry the API key elsewhere; the
failure names the target), and no API key in any stored error text (servers echo headers).
Workloads decide what to send when (`harness.client.closed_loop`, `.replay`).

The client measures whether it was the bottleneck: a lag probe (how late a 5 ms sleep wakes up),
the process CPU share over the phase, the time-weighted number of requests in flight, and each
request's queue delay (issue to body on the socket); harness.client.health judges them.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
from yarl import URL

from harness.client import arrival
from harness.client.aiohttp_stream import push_stream
from harness.client.h1_stream import H1Streams, Reply
from harness.client.health import ClientHealth, HealthProbe
from harness.client.inflight import InflightAccount
from harness.client.refusal import ERROR_BODY_BYTES, needs_body, read_some, refusal
from harness.client.sse import StreamAccumulator
from harness.config.schema_bench import ClientConfig
from harness.records import RequestRecord, RequestSpec

STALL_ERROR = "stalled: no data"
T = TypeVar("T")


@dataclass(slots=True)
class ClientSettings:
    """What the client is told; the client.* defaults are the schema's (harness/config/
    schema_bench.py declares each setting once, with its help), so a client built without a
    config behaves as the default sweep's. schema_bench imports no OmegaConf: a worker process
    stays light."""

    base_url: str
    timeout_s: float = ClientConfig.timeout_s
    connect_timeout_s: float = 30.0  # not a setting: connection set-up within the timeout
    stall_timeout_s: float = ClientConfig.stall_timeout_s  # no byte this long: the request fails
    api_key_env: str | None = None  # engine.api_key_env: the variable holding the key
    keep_alive: bool = True  # False: a new connection per request (servers that close anyway)
    strict_sse: bool = ClientConfig.strict_sse
    max_event_bytes: int = ClientConfig.max_event_bytes  # one SSE event larger fails the request
    # The client is a bottleneck when its estimated p99 timestamp error exceeds this, it used
    # more than max_cpu_share of a core, held requests longer than max_queue_delay_ms between
    # issue and body-on-socket (p99), or stalled long enough to move p99 E2EL/TPOT by more
    # than max_stall_share.
    max_stamp_err_ms: float = ClientConfig.max_stamp_err_ms
    max_cpu_share: float = ClientConfig.max_cpu_share
    max_queue_delay_ms: float = ClientConfig.max_queue_delay_ms
    max_stall_share: float = ClientConfig.max_stall_share
    workers: int = ClientConfig.workers  # client processes (harness.client.workers)
    transport: str = ClientConfig.transport  # aiohttp | httptools (h1_conn)
    read_path: str = ClientConfig.read_path  # httptools: compiled | python


@dataclass(slots=True, repr=False)
class PhaseResult:
    records: list[RequestRecord]
    start_ts: float  # perf_counter at the first send
    end_ts: float  # perf_counter when the last request finished
    start_wall: float  # time.time() at start_ts, to place the phase in calendar time
    health: ClientHealth

    @property
    def duration_s(self) -> float:
        return self.end_ts - self.start_ts

    def __repr__(self) -> str:  # never every record: reprs end up in tracebacks and logs
        return f"PhaseResult({len(self.records)} records, {self.duration_s:.3f} s)"


def _api_key(settings: ClientSettings) -> str | None:
    if not settings.api_key_env:
        return None
    key = os.environ.get(settings.api_key_env)
    if not key:
        raise RuntimeError(
            f"client.api_key_env names {settings.api_key_env!r} but that environment variable "
            "is empty; export it before running (the key is never written to results)"
        )
    return key


class StreamingClient(InflightAccount):
    """Use as `async with StreamingClient(settings) as c: await c.send(spec)`."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._base = settings.base_url.rstrip("/")
        self._urls: dict[str, URL] = {}  # parsed once per path: yarl parsing costs ~20 us
        # identity: aiohttp would advertise gzip/deflate, which the client (auto_decompress
        # off, to stamp the bytes as they arrive) could not read.
        self._headers = {"Content-Type": "application/json", "Accept": "text/event-stream",
                         "Accept-Encoding": "identity"}
        key = _api_key(settings)
        self._secret = key or ""
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._session: aiohttp.ClientSession | None = None
        self._h1: H1Streams | None = None
        super().__init__()

    async def __aenter__(self) -> StreamingClient:
        arrival.install()
        connector = aiohttp.TCPConnector(
            limit=0, ttl_dns_cache=None, force_close=not self.settings.keep_alive
        )
        timeout = aiohttp.ClientTimeout(
            total=self.settings.timeout_s, sock_connect=self.settings.connect_timeout_s,
            sock_read=self.settings.stall_timeout_s,
        )
        # Stamp send time when the body is on the socket, not when we start building the
        # request: aiohttp spends 0.3-0.5 ms per request before that on a slow core, which is
        # client overhead, not server latency. `issue_ts` keeps the earlier stamp.
        trace = aiohttp.TraceConfig()
        trace.on_request_chunk_sent.append(_stamp_sent)
        trace.on_connection_reuseconn.append(_mark_reused)
        trace.on_connection_create_start.append(_connect_start)
        trace.on_connection_create_end.append(_connect_end)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            read_bufsize=1 << 20,
            auto_decompress=False,
            trace_configs=[trace],
        )
        if self.settings.transport == "httptools":
            s = self.settings
            self._h1 = H1Streams(self._base, self._headers, s.connect_timeout_s,
                                 s.stall_timeout_s, s.keep_alive, s.read_path)
        elif self.settings.transport != "aiohttp":
            raise ValueError(f"client.transport is {self.settings.transport!r}: "
                             "use aiohttp or httptools")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._h1 is not None:
            self._h1.close()
            self._h1 = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def health_probe(self) -> HealthProbe:
        """A probe of this client's health over a phase, with the settings' thresholds."""
        s = self.settings
        return HealthProbe(self, s.max_stamp_err_ms, s.max_cpu_share, s.max_queue_delay_ms,
                           s.max_stall_share)

    def scrub(self, text: str) -> str:
        """The text without the API key: servers echo request headers in error bodies, and
        errors are stored in the requests Parquet."""
        return text.replace(self._secret, "***") if self._secret and self._secret in text else text

    async def send(self, spec: RequestSpec) -> RequestRecord:
        """Send one request and stream its reply. Never raises for server or network errors.

        A pooled keep-alive connection the server already closed fails before any response
        (the server never saw the request): that, and only that, is retried once on a fresh
        connection, with fresh timestamps, and counted in `retries`.
        """
        attempt = await self._send_once(spec)
        if attempt.stale_reuse:
            retried = await self._send_once(spec)
            retried.rec.retries = 1
            return retried.rec
        return attempt.rec

    async def _send_once(self, spec: RequestSpec) -> _Attempt:
        assert self._session is not None, "use StreamingClient as an async context manager"
        rec = RequestRecord(
            request_id=spec.request_id,
            phase=spec.phase,
            expected_prompt_tokens=spec.expected_prompt_tokens,
            max_tokens=spec.max_tokens,
            tags=dict(spec.tags),
        )
        attempt = _Attempt(rec)
        acc = StreamAccumulator(strict=self.settings.strict_sse,
                                max_event_bytes=self.settings.max_event_bytes)
        clock = time.perf_counter
        self._track(+1)
        rec.issue_ts = clock()
        try:
            if self._h1 is not None:
                if not await self._h1_send(spec, rec, acc, attempt):
                    rec.end_ts = clock()
                    return attempt
                acc.finish(rec, clock())
                return attempt
            url = self._urls.get(spec.path)
            if url is None:
                url = self._urls[spec.path] = URL(self._base + spec.path)
            # Redirects are not followed: a redirect would carry the API key to wherever it
            # points. The reply says where to point engine.url instead.
            async with self._session.post(
                url, data=spec.body,
                headers=self._headers if spec.headers is None else {**spec.headers,
                                                                   **self._headers},
                trace_request_ctx=attempt,
                allow_redirects=False,
            ) as resp:
                if math.isnan(rec.send_ts):
                    rec.send_ts = rec.issue_ts
                rec.http_status = resp.status
                refusal = await self._refusal(resp)
                if refusal:
                    rec.error = refusal
                    rec.end_ts = clock()
                    return attempt
                await push_stream(resp, acc, rec, spec.keep_raw, self.settings.stall_timeout_s)
            acc.finish(rec, clock())
        except TimeoutError:
            acc.finish(rec, clock())
            elapsed = clock() - rec.issue_ts
            if elapsed < self.settings.timeout_s:
                rec.error = (f"{STALL_ERROR} for {self.settings.stall_timeout_s:g} s "
                             "(client.stall_timeout_s)")
            else:
                rec.error = f"timeout after {self.settings.timeout_s:g} s (client.timeout_s)"
        except (aiohttp.ClientError, OSError) as exc:
            acc.finish(rec, clock())
            rec.error = self.scrub(f"{type(exc).__name__}: {exc}")[:500]
            attempt.stale_reuse = (
                rec.http_status == 0
                and attempt.reused
                and isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError)
            )
        except Exception as exc:  # nothing a server sends may abort the sweep: a reasoned failure
            acc.finish(rec, clock())
            rec.error = self.scrub(f"client error: {type(exc).__name__}: {exc}")[:500]
        finally:
            self._track(-1)
            if math.isnan(rec.send_ts):
                rec.send_ts = rec.issue_ts
            else:
                rec.queue_delay_s = max(rec.send_ts - rec.issue_ts - attempt.connect_s, 0.0)
            rec.error = self.scrub(rec.error)
            ok = rec.ok
            self._finished.append((rec.queue_delay_s, rec.send_ts,
                                   rec.first_token_ts if ok else math.nan,
                                   rec.last_token_ts if ok else math.nan))
        return attempt

    async def _refusal(self, resp: aiohttp.ClientResponse) -> str:
        """Why this reply cannot be read as a stream, or "" when it can."""
        body = b""
        if needs_body(resp.status, resp.headers.get("Content-Type")):
            body = await read_some(resp.content, ERROR_BODY_BYTES)
        return refusal(resp.status, resp.headers.get("Location"),
                       resp.headers.get("Content-Encoding"), resp.headers.get("Content-Type"),
                       body, self.scrub)

    async def _h1_send(self, spec: RequestSpec, rec: RequestRecord, acc: StreamAccumulator,
                       attempt: _Attempt) -> bool:
        """The stream over harness.client.h1_stream; False when the reply was refused."""
        assert self._h1 is not None
        raw = None
        if spec.keep_raw:
            rec.raw_reads = []
            raw = rec.raw_reads.append

        def sent(t: float) -> None:
            rec.send_ts = t

        def connected(reused: bool, seconds: float) -> None:
            attempt.reused, attempt.connect_s = reused, seconds

        reply = Reply()
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                await self._h1.exchange(spec.path, spec.body, acc, raw, reply, sent,
                                        connected, spec.headers)
        finally:
            rec.http_status = reply.status
        rec.error = refusal(reply.status, reply.location, reply.encoding, reply.content_type,
                            reply.body, self.scrub)
        return not rec.error


@dataclass(slots=True)
class _Attempt:
    """One try at a request, the context aiohttp's trace hooks write into."""

    rec: RequestRecord
    reused: bool = False  # went out on a pooled keep-alive connection
    connect_s: float = 0.0  # spent opening its connection (minus when it began, until done)
    stale_reuse: bool = False  # ...which the server had closed: nothing reached it


async def _mark_reused(_: object, ctx: Any, __: object) -> None:
    attempt = ctx.trace_request_ctx
    if isinstance(attempt, _Attempt):
        attempt.reused = True


async def _connect_start(_: object, ctx: Any, __: object) -> None:
    attempt = ctx.trace_request_ctx
    if isinstance(attempt, _Attempt):
        attempt.connect_s = -time.perf_counter()


async def _connect_end(_: object, ctx: Any, __: object) -> None:
    attempt = ctx.trace_request_ctx
    if isinstance(attempt, _Attempt):
        attempt.connect_s += time.perf_counter()


async def _stamp_sent(_: object, ctx: Any, __: object) -> None:
    attempt = ctx.trace_request_ctx
    if isinstance(attempt, _Attempt):
        attempt.rec.send_ts = time.perf_counter()


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on uvloop where available: it roughly halves the per-read overhead.

    The result travels in a box, never as the main task's result: with SIGINT at its default
    handler, Python 3.11's asyncio.Runner swaps in a partial holding that task, and
    signal.signal/getsignal build `ValueError(f"{partial!r} is not a valid Handlers")` on the
    way out, formatting the finished task's result: every RequestRecord of a phase, twice
    (minutes after a 100k-record phase; benchmarks/sigint_stall.py)."""
    box: list[T] = []

    async def boxed() -> None:
        box.append(await coro)

    try:
        import uvloop
    except ImportError:
        asyncio.run(boxed())
    else:
        uvloop.run(boxed())
    return box[0]
