"""Every reported metric within 1% or 0.5 ms of the truth the scripted server recorded."""

from __future__ import annotations

import math
import time
import urllib.request

import numpy as np
import orjson
import pytest

from harness.client.closed_loop import run_closed_loop
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.record.metrics import GpuCount, point_metrics, summarize
from harness.records import RequestSpec
from tests.vm_noise import noisy, wakeup_lateness


def _specs(
    n: int, max_tokens: int, chat: bool = False, spread: bool = True, itl_ms: float = 4.0
) -> list[RequestSpec]:
    """Requests whose TTFT and length vary like a real workload's (OSL in [0.8, 1] x L)."""
    rng = np.random.default_rng(7)
    specs = []
    for i in range(n):
        rid = f"r{i}"
        osl = int(rng.integers(int(0.8 * max_tokens), max_tokens + 1)) if spread else max_tokens
        body: dict = {"max_tokens": osl, "stream": True, "x_id": rid,
                      "stream_options": {"include_usage": True}}
        if spread:
            body["x_script"] = {"ttft_ms": float(rng.uniform(30, 50)), "itl_ms": itl_ms}
        if chat:
            body["messages"] = [{"role": "user", "content": "a b c"}]
        else:
            body["prompt"] = "a b c d"
        specs.append(RequestSpec(rid, "/v1/chat/completions" if chat else "/v1/completions",
                                 orjson.dumps(body), 3 if chat else 4, osl))
    return specs


def _truth(log: dict, records, duration: float) -> tuple[dict[str, float], dict[str, float]]:
    """Metrics recomputed from the times the server wrote each chunk, and for each metric family
    the largest error the client's chunk timestamps put into any one of its samples.

    The start of each request is the client's own stamp of the moment its request was on the
    socket (nothing else can see that moment); every later instant is the server's. A chunk's
    stamp error is the client's arrival stamp minus the server's write: loopback delivery,
    waiting for the event loop, or the OS not running the client at all.
    """
    ttft, tpot, e2el, gaps = [], [], [], []
    err: dict[str, list[float]] = {"ttft": [], "tpot": [], "e2el": [], "itl": [], "chunk": []}
    out_tok = 0
    for r in records:
        t = log[r.request_id]
        w = np.asarray(t["chunk_writes"])
        n = sum(t["chunk_tokens"])
        out_tok += n
        ttft.append(w[0] - r.send_ts)
        e2el.append(w[-1] - r.send_ts)
        tpot.append((w[-1] - w[0]) / (n - 1))
        gaps.extend(np.diff(w))
        assert len(r.chunk_ts) == len(w), (r.request_id, len(r.chunk_ts), len(w))
        d = np.asarray(r.chunk_ts) - w
        err["chunk"].extend(d)
        err["ttft"].append(d[0])
        err["e2el"].append(d[-1])
        err["tpot"].append((d[-1] - d[0]) / (n - 1))
        err["itl"].extend(np.diff(d))
    truth = {}
    for name, vals in (("ttft", ttft), ("tpot", tpot), ("e2el", e2el), ("itl", gaps)):
        truth.update(summarize(vals, name))
    truth["total_output_tokens"] = out_tok
    truth["output_tput"] = out_tok / duration
    worst = {k: float(np.abs(v).max()) for k, v in err.items()}
    worst["chunk_p99"] = float(np.percentile(np.abs(err["chunk"]), 99))
    worst.update({f"n_{k}": len(v) for k, v in err.items()})
    return truth, worst


def _close(measured: float, true: float, extra_s: float = 0.0) -> bool:
    return abs(measured - true) <= max(0.01 * abs(true), 0.0005, extra_s)


def _quantile(stat: str) -> float:
    """The quantile a statistic's name says ("p95" -> 0.95, "p99.9" -> 0.999); 0 otherwise."""
    try:
        return float(stat[1:]) / 100.0 if stat.startswith("p") else 0.0
    except ValueError:
        return 0.0


def _off_truth(m: dict, truth: dict, worst: dict[str, float], lenient: bool = False) -> dict:
    """Metrics outside 1% / 0.5 ms of the truth.

    A metric may also differ by the largest stamp error in its own samples when `lenient`, or
    when it is a quantile with fewer than ten samples beyond it (p99.9 of ~1300 ITLs, p90 of 48
    TTFTs): one chunk the OS delivered late then sets it. That bound is exact: a mean, a
    quantile or a population std moves by at most the largest change of any one sample, so a
    metric beyond it was computed wrongly, however late the chunks arrived.
    """
    bad = {}
    for key, true in truth.items():
        if key not in m:
            continue
        stat, _, family = key.partition("_")
        beyond = worst.get(f"n_{family}", 0) * (1 - _quantile(stat))
        extra = worst.get(family, 0.0) if lenient or beyond < 10 else 0.0
        if not _close(float(m[key]), true, extra):
            bad[key] = (m[key], true)
    return bad


def _measure(url: str, concurrency: int, specs: list[RequestSpec], chat: bool):
    async def go():
        async with StreamingClient(ClientSettings(url)) as c:
            # Warmup first, as every harness point does: first calls pay for lazy imports.
            await run_closed_loop(c, _specs(concurrency, 8, chat=chat), concurrency)
            return await run_closed_loop(c, specs, concurrency)

    phase = run_async(go())
    assert len(phase.records) == len(specs) and all(r.ok for r in phase.records)
    log = orjson.loads(urllib.request.urlopen(url + "/x/log").read())
    # Causality: each request was stamped as sent before the server received it.
    assert all(r.issue_ts <= r.send_ts < log[r.request_id]["received"] for r in phase.records)
    m = point_metrics(phase.records, phase.duration_s, GpuCount(1))
    truth, worst = _truth(log, phase.records, phase.duration_s)
    return phase, m, truth, worst


def _short_of_the_standard(phase, m: dict, truth: dict, worst: dict, concurrency: int) -> list:
    """Why an attempt falls short of: every metric within 1% / 0.5 ms of the truth, chunk
    stamps within 1 ms for 99% of chunks, the requested concurrency held, no self-flag."""
    why: list = []
    if phase.health.bottleneck:
        why.append(("client flagged itself", phase.health.reasons))
    if worst["chunk_p99"] > 0.001:
        why.append(("chunk stamp error p99 over 1 ms", worst))
    if bad := _off_truth(m, truth, worst):
        why.append(("off the truth", bad, worst))
    if abs(phase.health.inflight_mean - concurrency) > 0.15 * concurrency:
        why.append(("concurrency not held", phase.health.inflight_mean))
    return why


# Inter-token delay per concurrency keeps the chunk rate within what one Python client core here
# ingests as separate small reads (~2k/s at 64 streams, beside a Python server on the other
# core); the overload case is the next test. At 24 ms (~2.7k/s) c64 passed alone every time but
# failed inside the full suite twice in three runs, stamp p99 1.0-1.6 ms over four attempts
# on a quiet host: the edge of one core, where anything else in the test process tips it.
@pytest.mark.parametrize(("concurrency", "itl_ms"), [(1, 4.0), (8, 4.0), (64, 32.0)])
@pytest.mark.parametrize("chat", [False, True])
def test_metrics_match_server_truth(
    scripted_server: str, concurrency: int, itl_ms: float, chat: bool
) -> None:
    """Every attempt: each metric within what its samples' measured stamp errors allow (so the
    computation is right), tokens from usage, TPOT per token. At least one of four attempts,
    spaced out: the standard itself.

    Why both: this 2-vCPU VM wakes even an idle client 1-4 ms late a few times in a 13 s run
    (measured against the server's writes; the client's 5 ms loop-lag probe sees only some of
    these), which is why quantiles decided by their top few samples get the exact bound (see
    _off_truth); and now and then it stalls for up to 35 ms, or stays noisy for minutes (CI
    once saw p99 TTFT of 64 requests 2 ms off). Such a run measures the VM, not the
    instrument; a client that is really off fails every attempt. If the VM stays noisy through
    all of them, as the controls show (an idle process's 1 ms sleeps waking over 1 ms late at
    p99, 0.15-0.65 ms here normally; CPU stolen by the hypervisor; other processes on the
    cores: tests/vm_noise.py), accuracy cannot be measured here and the test says so by
    skipping, with every attempt's figures.
    """
    n = max(4 * concurrency, 48)
    specs = _specs(n, max_tokens=60, chat=chat, itl_ms=itl_ms)
    attempts: list[dict] = []
    for attempt in range(4):
        time.sleep(2.0 * attempt)  # let a noisy spell of the VM pass
        with wakeup_lateness() as machine:
            phase, m, truth, worst = _measure(scripted_server, concurrency, specs, chat)
        bad = _off_truth(m, truth, worst, lenient=True)
        assert not bad, f"metrics computed wrongly at c={concurrency}: {bad} ({worst})"
        assert m["total_output_tokens"] == sum(s.max_tokens for s in specs)  # from usage
        assert m["num_failed"] == 0
        # Multi-token chunks: fewer chunks than tokens, and TPOT is per token, not per chunk.
        assert m["mean_itl"] > m["mean_tpot"] * 1.5
        assert math.isclose(m["median_intvty"], 1 / m["median_tpot"])
        why = _short_of_the_standard(phase, m, truth, worst, concurrency)
        if not why:
            return
        attempts.append({"why": why, "machine": machine, "health": phase.health})
    if all(noisy(a["machine"]) and a["health"].cpu_share < 0.5 for a in attempts):
        pytest.skip(f"this machine was too noisy to measure 1 ms accuracy in every attempt (an "
                    f"idle control woke over 1 ms late at p99, the hypervisor stole over 2% of "
                    f"the CPU, or other processes used over 0.15 of a core: tests/vm_noise.py); "
                    f"each attempt's metrics were within the exact bound of its stamp errors: "
                    f"{attempts}")
    pytest.fail(f"four attempts at c={concurrency} short of the standard: {attempts}")


def test_lockstep_burst_is_accurate_or_flagged(scripted_server: str) -> None:
    """64 identical requests finish in the same instant, and each completion costs the client
    a new request (~0.3 ms of CPU here): the loop stalls. The client must then say so.

    It once did not, on an idle machine (stamp error p99 3.7 ms measured, lag max 4.6 ms,
    estimate ~0): a few short stalls are too little time for a p99 over all chunks, but they
    sit exactly on the burst's last chunks. The stall share (harness.client.health.stall_share)
    sees the last chunks stamped inside a stall and flags the point."""
    specs = _specs(256, max_tokens=60, spread=False)

    async def go():
        async with StreamingClient(ClientSettings(scripted_server)) as c:
            return await run_closed_loop(c, specs, 64)

    phase = run_async(go())
    log = orjson.loads(urllib.request.urlopen(scripted_server + "/x/log").read())
    m = point_metrics(phase.records, phase.duration_s, GpuCount(1))
    truth, worst = _truth(log, phase.records, phase.duration_s)
    bad = _off_truth(m, truth, worst)
    late = worst["chunk_p99"] > 0.001
    assert not (bad or late) or phase.health.bottleneck, (phase.health, worst, bad)
