"""The client watching itself: event-loop lag, CPU share, requests in flight, and from them an
estimate of its own timestamp error. A point whose client was the bottleneck is flagged."""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from harness.client.loop_passes import PASSES, PassMeter
from harness.client.stamp_probe import StampProbe

# The probe only sees stalls that cover one of its wake-ups, so a stall shorter than this can
# go unseen (tests/client/test_client_accuracy.py measures the real per-chunk error instead). A 1 ms
# probe would see more but costs CPU the 750k chunks/s target does not have.
_LAG_PROBE_S = 0.005
# How late the probe's timer wakes on an idle loop (p50 0.13 ms on uvloop, 0.17 ms on asyncio
# here): timer granularity, not an error any chunk suffers.
_IDLE_LAG_MS = 0.25
# Timers time out in whole milliseconds (libuv's uv_timer, epoll_wait's timeout), so an idle
# loop's wake-ups spread over about a millisecond either side of due: lateness up to this is
# the timer's resolution, seen while the loop sat in its poll ready for any chunk.
_TIMER_RESOLUTION_MS = 1.0
# Stamp-probe samples (one per 2 ms on average) from which its measured bound alone is the
# point's stamp-error figure: a 0.4 s phase; below, the larger of it and the timer's estimate.
_PROBE_ENOUGH = 200


@dataclass(slots=True)
class ClientHealth:
    """How the client itself behaved during a phase."""

    lag_p50_ms: float = math.nan  # how late a 5 ms timer fired
    lag_p99_ms: float = math.nan
    lag_max_ms: float = math.nan
    # Timestamp error of a chunk, p99: the measured bound (stamp_error_bound; with a short
    # phase's few probe samples, the larger of it and the timer's stamp_error_quantile)
    stamp_err_p99_ms: float = math.nan
    stamp_err_p999_ms: float = math.nan
    # Measured parts of the same (stamp_error_bound): the wait until a loop pass starts, from
    # stamps another process sent at random instants (harness.client.stamp_probe), and the wait
    # behind a pass's earlier reads (harness.client.loop_passes)
    stamp_probe_p99_ms: float = math.nan
    stamp_probe_samples: int = 0
    pass_offset_p99_ms: float = math.nan
    stamp_timer_p99_ms: float = math.nan  # the timer's estimate alone (stamp_error_quantile)
    stamp_bound_p99_ms: float = math.nan  # the measured bound alone (stamp_error_bound)
    cpu_share: float = math.nan  # process CPU seconds / wall seconds
    cpu_cores: float = math.nan  # the same over all client processes (client.workers)
    inflight_mean: float = math.nan  # time-weighted mean of requests in flight
    # Issue -> body on the socket, connection set-up excluded, over the phase's requests
    queue_delay_p50_ms: float = math.nan
    queue_delay_p99_ms: float = math.nan
    queue_delay_max_ms: float = math.nan
    # How far the probe's stalls could have moved p99 TTFT or E2EL (and with it TPOT), as a
    # share: from the requests whose first or last chunk was stamped inside one (stall_share)
    stall_share: float = math.nan
    bottleneck: bool = False
    reasons: list[str] = field(default_factory=list)
    # Every probe wake-up as (perf_counter when it woke, how late in ms): for time series of
    # the client's own lag. Not in fields() nor repr: a point records summaries, and there are
    # thousands a minute.
    lag_samples: list[tuple[float, float]] = field(default_factory=list, repr=False)

    def fields(self) -> dict[str, object]:
        """What the point records of the client's health (keys in harness/catalogue)."""
        return {
            "client_bottleneck": self.bottleneck,
            "client_lag_p99_ms": self.lag_p99_ms,
            "client_lag_max_ms": self.lag_max_ms,
            "client_stamp_err_p99_ms": self.stamp_err_p99_ms,
            "client_stamp_probe_p99_ms": self.stamp_probe_p99_ms,
            "client_pass_offset_p99_ms": self.pass_offset_p99_ms,
            "client_cpu_share": self.cpu_share,
            "client_inflight_mean": self.inflight_mean,
            "client_queue_delay_p50_ms": self.queue_delay_p50_ms,
            "client_queue_delay_p99_ms": self.queue_delay_p99_ms,
            "client_queue_delay_max_ms": self.queue_delay_max_ms,
            "client_stall_share": self.stall_share,
        }


class InflightMeter(Protocol):
    """What the probe reads of the client: its time-weighted requests in flight. A meter may
    also have `finished_requests() -> [(queue delay s, E2EL s or NaN)]` since the reset
    (StreamingClient does): then the probe reports queue delay and the stall share."""

    def reset_inflight_area(self) -> None: ...

    def inflight_area(self) -> float: ...


class HealthProbe:
    """Samples event-loop lag and CPU share while a phase runs.

    Given the in-flight accounting and the thresholds explicitly (`StreamingClient.health_probe()`
    builds one), so that this module needs nothing from the client's.
    """

    def __init__(self, meter: InflightMeter, max_stamp_err_ms: float = 1.0,
                 max_cpu_share: float = 0.95, max_queue_delay_ms: float = 10.0,
                 max_stall_share: float = 0.01) -> None:
        self.meter = meter
        self.max_stamp_err_ms, self.max_cpu_share = max_stamp_err_ms, max_cpu_share
        self.max_queue_delay_ms, self.max_stall_share = max_queue_delay_ms, max_stall_share
        self._lags: list[float] = []
        self._woke: list[float] = []  # perf_counter of each wake-up, beside its lag
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ctx = contextvars.copy_context()  # every wake-up's: no context copied per timer
        self._stamps = StampProbe()
        self._cpu0 = 0.0
        self._wall0 = 0.0

    def _wake(self, t: float) -> None:
        """A timer set at t for _LAG_PROBE_S: how late it ran, and the next one.

        A chain of plain timer callbacks, not a task sleeping in a loop: the same lateness (set
        at t, run at now) without a future and a task step per wake-up. On an idle loop each
        wake-up is the costly part (~60 us of CPU here for uvloop's timer, 30-50 us for a bare
        epoll timeout on this VM), and a task's sleep cost ~30 % more CPU than this chain
        (docs/client.md, "What the self-check's wake-ups cost")."""
        now = time.perf_counter()
        self._woke.append(now)
        self._lags.append(now - t - _LAG_PROBE_S)
        assert self._loop is not None
        self._timer = self._loop.call_later(_LAG_PROBE_S, self._wake, now, context=self._ctx)

    def start(self) -> None:
        self._cpu0 = time.process_time()
        self._wall0 = time.perf_counter()
        self.meter.reset_inflight_area()
        self._loop = asyncio.get_running_loop()
        self._timer = self._loop.call_later(_LAG_PROBE_S, self._wake, time.perf_counter(),
                                            context=self._ctx)
        self._stamps.start()
        PASSES.start()

    async def stop(self) -> ClientHealth:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._stamps.stop()
        PASSES.stop()
        wall = max(time.perf_counter() - self._wall0, 1e-9)
        h = ClientHealth()
        h.cpu_share = h.cpu_cores = (time.process_time() - self._cpu0) / wall
        h.inflight_mean = self.meter.inflight_area() / wall
        if self._lags:
            lags_ms = np.asarray(self._lags) * 1000.0
            h.lag_samples = list(zip(self._woke, lags_ms.tolist(), strict=True))
            h.lag_p50_ms = float(np.percentile(lags_ms, 50))
            h.lag_p99_ms = float(np.percentile(lags_ms, 99))
            h.lag_max_ms = float(lags_ms.max())
            h.stamp_err_p99_ms = stamp_error_quantile(lags_ms, wall * 1000.0, 0.99)
            h.stamp_err_p999_ms = stamp_error_quantile(lags_ms, wall * 1000.0, 0.999)
        measured(h, self._stamps.errors_ms(), PASSES)
        finished = getattr(self.meter, "finished_requests", None)
        if finished is not None:
            request_figures(h, finished())
        h.reasons = self.reasons(h)
        h.bottleneck = bool(h.reasons)
        return h

    def reasons(self, h: ClientHealth) -> list[str]:
        """Why the client was the bottleneck, with this probe's thresholds (the point's
        validity rules say the same from harness.record.validity.client_rules)."""
        out = []
        if h.stamp_err_p99_ms > self.max_stamp_err_ms:
            out.append(f"client timestamp error p99 ~{h.stamp_err_p99_ms:.1f} ms "
                       f"> {self.max_stamp_err_ms:g} ms (event loop busy or descheduled)")
        if h.cpu_share > self.max_cpu_share:
            out.append(f"client CPU share {h.cpu_share:.2f} > {self.max_cpu_share:g}")
        if h.queue_delay_p99_ms > self.max_queue_delay_ms:
            out.append(f"client queue delay p99 {h.queue_delay_p99_ms:.1f} ms "
                       f"> {self.max_queue_delay_ms:g} ms")
        if stalled(h.lag_max_ms, h.stall_share, self.max_stamp_err_ms, self.max_stall_share):
            out.append(f"client stall of {h.lag_max_ms:.1f} ms could move p99 E2EL/TPOT by "
                       f"{100 * h.stall_share:.1f}% > {100 * self.max_stall_share:g}%")
        return out


def measured(h: ClientHealth, probe_ms: np.ndarray, passes: PassMeter) -> None:
    """Fold the measured parts of the stamp error into h (see stamp_error_bound).

    With enough probe samples the measured bound is the figure: the timer's estimate also
    counts its own millisecond rounding and flagged quiet clients beside an embedded engine
    (1.1-1.3 ms where the probe measured 0.11-0.31 ms). Over a short phase, few samples: the
    larger of the two."""
    h.stamp_probe_samples = int(probe_ms.size)
    if probe_ms.size:
        h.stamp_probe_p99_ms = float(np.percentile(probe_ms, 99))
    h.pass_offset_p99_ms = passes.quantile_ms(0.99)
    h.stamp_timer_p99_ms = h.stamp_err_p99_ms
    for q, name in ((0.99, "stamp_err_p99_ms"), (0.999, "stamp_err_p999_ms")):
        bound = stamp_error_bound(probe_ms, passes, q)
        if q == 0.99:
            h.stamp_bound_p99_ms = bound
        if math.isnan(bound):
            continue  # no probe: the timer's estimate stands
        if probe_ms.size >= _PROBE_ENOUGH:
            setattr(h, name, bound)
        else:
            setattr(h, name, float(np.nanmax([getattr(h, name), bound])))


def stamp_error_bound(probe_ms: np.ndarray, passes: PassMeter, q: float) -> float:
    """A bound on the q-quantile of a chunk's stamp error from the two waits it is made of.

    error = (arrival -> its pass starts) + (pass start -> its read): the first part is what
    the stamp probe measures at random instants, the second the read's offset in its pass.
    Whatever their dependence, P(A + B > a + b) <= P(A > a) + P(B > b): for any split of the
    1 - q tail, s to A and the rest to B, the sum of A's (1 - s) and B's (1 - (1 - q - s))
    quantiles bounds the q-quantile of the sum, and so does the least of those sums. An even
    split alone charged a quiet client beside a busy engine the probe's 99.5th percentile
    (1.1-2.0 ms where its 99th was 0.1-0.75 ms and its pass offsets 0.04 ms). NaN without
    probe samples.
    """
    if probe_ms.size == 0:
        return math.nan
    tail = 1.0 - q
    shares = tail * np.linspace(0.05, 0.95, 19)  # A's share of the tail
    a = np.percentile(probe_ms, 100.0 * (1.0 - shares))
    b = np.asarray(passes.quantiles_ms([1.0 - (tail - s) for s in shares]))
    return float(np.min(a + np.nan_to_num(b, nan=0.0)))


def request_figures(h: ClientHealth, finished: list[tuple[float, float, float, float]]) -> None:
    """Queue-delay quantiles and the stall share from the phase's finished requests
    (queue delay, send, first token, last token; StreamingClient.finished_requests)."""
    if not finished:
        return
    arr = np.asarray(finished, dtype=float).reshape(-1, 4)
    queue = arr[:, 0][np.isfinite(arr[:, 0])] * 1000.0
    if queue.size:
        h.queue_delay_p50_ms = float(np.percentile(queue, 50))
        h.queue_delay_p99_ms = float(np.percentile(queue, 99))
        h.queue_delay_max_ms = float(queue.max())
    ok = arr[np.isfinite(arr[:, 3])]
    if ok.size and h.lag_samples:
        h.stall_share = stall_share(ok[:, 1], ok[:, 2], ok[:, 3], h.lag_samples)


def stall_share(send: np.ndarray, first: np.ndarray, last: np.ndarray,
                lags: list[tuple[float, float]]) -> float:
    """How far the stalls the probe saw could have moved p99 TTFT or p99 E2EL, as a share.

    A probe wake-up at w, L ms late, says the loop did not run from w - L to w: a chunk that
    arrived then was stamped at about w, up to L late. So a request whose first or last chunk
    was stamped inside such a span (to 1 ms after it: the same loop pass) may be that much too
    slow. p99 over a point's few requests is decided by its slowest ones, so one stall on one
    tail request moves it (a 108 ms stall, p99 E2EL +5.7%, 20 requests). The share
    is the largest relative drop of p99 TTFT or E2EL when each request's stamps are moved back
    by all the lateness they may carry; TPOT spans first to last chunk, and moves as E2EL.
    """
    wake = np.asarray([t for t, _ in lags])
    # Lateness within the timer's resolution is the poll's rounding, not a stop (a quiet
    # client's 1.2 ms wake-up on 30 ms requests read as a 4% stall and invalidated its point).
    lag_s = np.clip(np.asarray([lag for _, lag in lags]) / 1000.0
                    - _TIMER_RESOLUTION_MS / 1000.0, 0.0, None)

    def lateness(stamps: np.ndarray) -> np.ndarray:
        i = np.searchsorted(wake + 0.001, stamps)  # the first wake-up not before the stamp
        i = np.minimum(i, wake.size - 1)
        start = wake[i] - lag_s[i]
        return np.where((stamps >= start) & (stamps <= wake[i] + 0.001), stamps - start, 0.0)

    out = 0.0
    late_first, late_last = lateness(first), lateness(last)
    for stamp, late in ((first, late_first), (last, late_last)):
        span = stamp - send
        p99 = float(np.percentile(span, 99))
        if p99 > 0:
            out = max(out, (p99 - float(np.percentile(span - late, 99))) / p99)
    return out


def stalled(lag_max_ms: float, stall_share: float, max_stamp_err_ms: float,
            max_stall_share: float) -> bool:
    """A stall that could have moved the reported tail by more than the share (stall_share);
    stalls within the stamp-error bound are already accepted by it."""
    return lag_max_ms > max_stamp_err_ms and stall_share > max_stall_share


def stamp_error_quantile(lags_ms: np.ndarray, wall_ms: float, q: float) -> float:
    """Estimated q-quantile of the delay between a chunk's arrival and its timestamp.

    A timer that fires L ms late reveals a span of about L ms in which the loop could not run;
    a chunk arriving inside that span waits between 0 and L ms. With chunks arriving at random
    instants, P(delay > x) = sum(max(0, L_i - x)) / wall. Timer granularity makes every timer a
    little late; only the lateness of an idle loop's timer (_IDLE_LAG_MS) is taken off, never
    more: a saturated loop is late on every wake-up, and taking its median off (as this did
    once) hid most of its error (c256: 16.8 ms estimated, 50 ms measured).
    """
    if lags_ms.size == 0 or wall_ms <= 0:
        return math.nan
    late = np.clip(lags_ms - min(float(np.median(lags_ms)), _IDLE_LAG_MS), 0.0, None)
    # The loop may have stopped before the timer was due (any time since it last ran the
    # probe, up to a probe period earlier): add half a period, never more than the lateness
    # itself, so an idle loop's jitter stays negligible. Measured against the server's writes
    # on a descheduled client (c16-c128, one event per write) the bare lateness said 5.2-54 ms
    # where 6.8-60 ms were measured.
    # Lateness within the timer's resolution is the poll's rounding, not a stop: no extension.
    excess = late + np.minimum(np.clip(late - _TIMER_RESOLUTION_MS, 0.0, None),
                               _LAG_PROBE_S * 500.0)
    target = (1.0 - q) * wall_ms

    def time_above(x: float) -> float:
        return float(np.clip(excess - x, 0.0, None).sum())

    if time_above(0.0) <= target:
        return 0.0
    lo, hi = 0.0, float(excess.max())
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if time_above(mid) > target else (lo, mid)
    return hi
