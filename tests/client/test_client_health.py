"""The client's self-check: its raw lag samples, and stamp-error figures that bound the truth."""

from __future__ import annotations

import asyncio
import math
import os
import re
import time

import numpy as np
import orjson
import pytest

from harness.client.closed_loop import run_closed_loop
from harness.client.health import (
    ClientHealth,
    HealthProbe,
    request_figures,
    stalled,
    stamp_error_quantile,
)
from harness.client.loop_passes import PassMeter
from harness.client.stamp_probe import StampProbe
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.record.validity import ValiditySettings, client_rules
from harness.records import RequestSpec
from harness.testing.spawn import spawn_server
from tests.vm_noise import noisy, wakeup_lateness


class _Meter:
    def reset_inflight_area(self) -> None:
        pass

    def inflight_area(self) -> float:
        return 0.0


def test_lag_samples_are_wakeups_on_the_perf_counter_clock() -> None:
    """Each sample is (perf_counter at the wake-up, lateness in ms), in order, inside the
    probe's window; a 30 ms blocking stall shows as one sample about 25 ms late. The samples
    are raw data for time series, not a point field."""
    async def main() -> tuple[float, float, ClientHealth]:
        probe = HealthProbe(_Meter())
        t0 = time.perf_counter()
        probe.start()
        await asyncio.sleep(0.03)
        time.sleep(0.03)  # the loop cannot run: the next wake-up is ~25 ms late
        await asyncio.sleep(0.03)
        h = await probe.stop()
        return t0, time.perf_counter(), h

    t0, t1, h = asyncio.run(main())
    times = [t for t, _ in h.lag_samples]
    lags = [lag for _, lag in h.lag_samples]
    assert len(h.lag_samples) >= 3 and times == sorted(times)
    assert t0 < times[0] and times[-1] < t1
    assert max(lags) >= 20.0 and max(lags) == h.lag_max_ms
    assert "lag_samples" not in ClientHealth().fields()


def test_stamp_error_estimate_bounds_a_saturated_loop() -> None:
    """A loop late by ~40 ms on every wake-up (c256 here) makes chunks wait up to ~40 ms; the
    estimate must say so, not take the 40 ms median off as a baseline (which said ~0)."""
    rng = np.random.default_rng(1)
    lags = rng.uniform(35.0, 45.0, size=900)  # 900 wake-ups, each 5 ms + ~40 ms apart
    wall = float((lags + 5.0).sum())
    assert stamp_error_quantile(lags, wall, 0.99) > 30.0
    # An idle loop: timer granularity only, no error
    idle = rng.uniform(0.05, 0.2, size=900)
    assert stamp_error_quantile(idle, float((idle + 5.0).sum()), 0.99) == 0.0


def test_request_figures_and_the_stall_bound() -> None:
    """At concurrency 1 a single 108 ms stall moved p99 E2EL by ~5.7% (20 requests,
    p99 is the maximum) and the point stayed valid. A stall that holds back the last chunk of
    the slowest request fails the point; the same stall in the middle of a stream, where no
    first or last chunk was stamped, moves no TTFT or E2EL and does not."""
    sends = np.arange(20) * 2.0  # one at a time, 1.9 s each, first chunk after 0.1 s
    finished = [(0.0004, t, t + 0.1, t + 1.9) for t in sends]
    finished[-1] = (0.002, 38.0, 38.1, 38.0 + 1.9 + 0.108)  # the slowest: held by the stall
    finished.append((0.001, 40.0, math.nan, math.nan))  # a failed request: no stamps
    wakes = [(float(t), 0.2) for t in np.arange(0.0, 42.0, 0.005)]
    stall = [(38.0 + 1.9 + 0.108 + 0.0002, 108.0)]  # woke just after the held chunk's stamp
    h = ClientHealth(lag_max_ms=108.0, lag_samples=sorted(wakes + stall))
    request_figures(h, finished)
    e2el = np.full(20, 1.9)
    e2el[-1] += 0.108
    moved = np.percentile(e2el, 99) - np.percentile(np.full(20, 1.9), 99)
    assert h.stall_share == pytest.approx(moved / np.percentile(e2el, 99), rel=0.02)
    assert h.queue_delay_max_ms == pytest.approx(2.0) and h.queue_delay_p50_ms < 0.5
    rules = {r.name: r for r in client_rules(h.fields(), ValiditySettings())}
    assert not rules["client_stall"].ok and "4.4%" in rules["client_stall"].message
    assert rules["client_queue_delay"].ok
    mid = ClientHealth(lag_max_ms=108.0, lag_samples=sorted([*wakes, (39.0, 108.0)]))
    request_figures(mid, finished)
    assert mid.stall_share == 0.0
    assert not stalled(0.8, 0.5, 1.0, 0.01)  # within the stamp-error bound
    slow = {**h.fields(), "client_queue_delay_p99_ms": 14.0}
    bad = {r.name: r for r in client_rules(slow, ValiditySettings())}["client_queue_delay"]
    assert not bad.ok and "client.workers" in bad.remedy


def test_records_carry_their_queue_delay(scripted_server: str) -> None:
    """Every sent request records issue -> body on the socket; the phase summarises it."""
    body = orjson.dumps({"prompt": "a b", "max_tokens": 3, "stream": True,
                         "stream_options": {"include_usage": True}})
    specs = [RequestSpec(f"q{i}", "/v1/completions", body, 2, 3) for i in range(12)]

    async def go():
        async with StreamingClient(ClientSettings(scripted_server)) as c:
            return await run_closed_loop(c, specs, 4)

    phase = run_async(go())
    for r in phase.records:
        assert r.ok and 0.0 <= r.queue_delay_s <= r.send_ts - r.issue_ts
    h = phase.health
    assert 0.0 <= h.queue_delay_p50_ms <= h.queue_delay_p99_ms <= h.queue_delay_max_ms < 1000
    assert h.stall_share >= 0.0
    assert {"client_queue_delay_p99_ms", "client_stall_share"} <= set(h.fields())


def test_stamp_probe_measures_a_blocked_loop() -> None:
    """Stamps sent by the probe's writer process at random instants, read by the loop: while
    the loop is free they are read within a fraction of a millisecond; one sent while a
    callback blocks the loop for 60 ms waits for it, and the samples say so. The writer
    process is gone after stop."""
    async def main() -> tuple[StampProbe, int]:
        probe = StampProbe(mean_interval_s=0.001, seed=3)
        probe.start()
        assert probe._proc is not None
        pid = probe._proc.pid
        await asyncio.sleep(0.3)
        time.sleep(0.06)  # the loop cannot run
        await asyncio.sleep(0.2)
        probe.stop()
        return probe, pid

    probe, pid = asyncio.run(main())
    errs = probe.errors_ms()
    assert probe.failure == "" and errs.size > 100
    assert np.median(errs) < 1.0  # free most of the time
    assert 30.0 < errs.max() < 80.0  # one sent early in the block waited for most of it
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_stamp_writer_runs_away_from_a_pinned_client() -> None:
    """A client held to one core gets its probe's writer on the others (a chunk comes from
    another core, and waking an idle core is the slower kind); an unpinned client's writer may
    run anywhere."""
    mine = os.sched_getaffinity(0)

    async def writer_cpus() -> set[int]:
        probe = StampProbe()
        probe.start()
        try:
            assert probe._proc is not None
            return os.sched_getaffinity(probe._proc.pid)
        finally:
            probe.stop()

    core = min(mine)
    os.sched_setaffinity(0, {core})
    try:
        pinned = asyncio.run(writer_cpus())
    finally:
        os.sched_setaffinity(0, mine)
    assert pinned and core not in pinned
    assert asyncio.run(writer_cpus()) == mine


def test_pass_offsets_count_the_wait_behind_a_pass() -> None:
    """Reads handled in one loop pass wait for the ones before them: their offsets from the
    pass's first read are counted; a read in the next pass starts from zero again."""
    meter = PassMeter()

    async def main() -> None:
        meter.start()
        t = time.perf_counter()
        for dt in (0.0, 0.0005, 0.002, 0.004):  # one pass: four reads, the last 4 ms on
            meter.read(t + dt)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        meter.read(t + 0.01)  # a new pass: offset 0
        meter.stop()
        meter.read(t + 0.02)  # stopped: not counted

    asyncio.run(main())
    assert meter.reads() == 5
    assert meter.quantile_ms(0.99) == pytest.approx(4.0, abs=0.03)
    assert meter.quantile_ms(0.5) == pytest.approx(0.52, abs=0.03)


@pytest.mark.parametrize("transport", ["aiohttp", "httptools"])
@pytest.mark.parametrize(("concurrency", "events"), [(64, 1), (128, 48)])
def test_stamp_error_figure_bounds_the_measured_error(concurrency: int, events: int,
                                                      transport: str) -> None:
    """The client's stamp-error p99 must bound its real error, measured against the
    server's write stamps (harness.testing.fast_sse_server stamps every write with its send
    time on the same clock), from a quiet client (one event per write) to a saturated one
    (48 events per write, every stream every 2 ms: the loop falls behind).

    Up to three attempts, as tests/client/test_client_accuracy.py: both figures are p99s of samples
    (the probe's ~600, the chunks' thousands), and one VM stall that lands on many chunks and
    few probe samples can put them apart once; a figure that does not bound the error fails
    every attempt. If every attempt falls short on a noisy machine (tests/vm_noise.py), the test
    skips with the figures."""
    tokens = 600 if events == 1 else 24_000  # ~1.2 s a stream, and longer when saturated
    body = orjson.dumps({"prompt": "x", "max_tokens": tokens, "stream": True})
    specs = [RequestSpec(f"r{i}", "/v1/completions", body, 1, tokens, keep_raw=i % 4 == 0)
             for i in range(concurrency)]
    attempts: list[dict] = []
    for attempt in range(3):
        time.sleep(2.0 * attempt)  # let a noisy spell of the VM pass
        with spawn_server("harness.testing.fast_sse_server", "--events-per-tick", str(events),
                          "--tick-ms", "2") as port, wakeup_lateness() as machine:
            async def go():
                settings = ClientSettings(f"http://127.0.0.1:{port}", transport=transport)
                async with StreamingClient(settings) as c:
                    return await run_closed_loop(c, specs, concurrency)

            phase = run_async(go())
        errs = np.asarray([t - float(m.group(1)) for r in phase.records
                           for t, buf in r.raw_reads or ()
                           for m in re.finditer(rb'"t":([0-9.]+)', buf)]) * 1000.0
        h = phase.health
        assert errs.size > 1000 and h.stamp_probe_samples > 100
        measured = float(np.percentile(errs, 99))
        if h.stamp_err_p99_ms >= measured:
            return
        attempts.append({"figure_ms": h.stamp_err_p99_ms, "measured_ms": measured,
                         "machine": machine, "health": h})
    if all(noisy(a["machine"]) for a in attempts):
        pytest.skip(f"the machine was noisy in every attempt (tests/vm_noise.py): {attempts}")
    pytest.fail(f"the stamp-error figure fell short of the measured error p99 in every "
                f"attempt: {attempts}")
