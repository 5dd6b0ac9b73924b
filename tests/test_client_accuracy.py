"""Every reported metric within 1% or 0.5 ms of the truth the scripted server recorded."""

from __future__ import annotations

import math
import urllib.request

import numpy as np
import orjson
import pytest

from harness.client import ClientSettings, StreamingClient, run_async, run_closed_loop
from harness.metrics import GpuCount, point_metrics, summarize
from harness.records import RequestSpec


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


def _truth(log: dict, records, duration: float) -> dict[str, float]:
    """Metrics recomputed from the times the server wrote each chunk.

    The start of each request is the client's own stamp of the moment its request was on the
    socket (nothing else can see that moment); every later instant is the server's.
    """
    ttft, tpot, e2el, gaps = [], [], [], []
    out_tok = 0
    for r in records:
        t = log[r.request_id]
        w = t["chunk_writes"]
        n = sum(t["chunk_tokens"])
        out_tok += n
        ttft.append(w[0] - r.send_ts)
        e2el.append(w[-1] - r.send_ts)
        tpot.append((w[-1] - w[0]) / (n - 1))
        gaps.extend(np.diff(w))
    truth = {}
    for name, vals in (("ttft", ttft), ("tpot", tpot), ("e2el", e2el), ("itl", gaps)):
        truth.update(summarize(vals, name))
    truth["total_output_tokens"] = out_tok
    truth["output_tput"] = out_tok / duration
    return truth


def _close(measured: float, true: float, extra_s: float = 0.0) -> bool:
    return abs(measured - true) <= max(0.01 * abs(true), 0.0005, extra_s)


def _off_truth(m: dict, truth: dict, health) -> dict:
    """Metrics outside 1% / 0.5 ms of the truth.

    Tail statistics of a few thousand samples are set by the rarest stalls, and this 2-vCPU VM
    deschedules an idle process for over 0.5 ms a few times every 5 s (and once in a while for
    ~15 ms). For p99 the bound also admits the client's own estimate of its p99 timestamp
    error, for p99.9 and std its p99.9 estimate (both asserted bounded by the callers): the
    instrument must know its error bars.
    """
    bad = {}
    for key, true in truth.items():
        if key not in m:
            continue
        stat = key.split("_")[0]
        extra = {"p99": health.stamp_err_p99_ms, "p99.9": health.stamp_err_p999_ms,
                 "std": health.stamp_err_p999_ms}.get(stat, 0.0) / 1000
        if not _close(float(m[key]), true, extra):
            bad[key] = (m[key], true)
    return bad


# Inter-token delay per concurrency keeps the chunk rate at what one Python client core here
# ingests as separate small reads (~4k/s at 64 streams); the overload case is the next test.
@pytest.mark.parametrize(("concurrency", "itl_ms"), [(1, 4.0), (8, 4.0), (64, 16.0)])
@pytest.mark.parametrize("chat", [False, True])
def test_metrics_match_server_truth(
    scripted_server: str, concurrency: int, itl_ms: float, chat: bool
) -> None:
    n = max(4 * concurrency, 48)
    specs = _specs(n, max_tokens=60, chat=chat, itl_ms=itl_ms)

    async def go():
        async with StreamingClient(ClientSettings(scripted_server)) as c:
            # Warmup first, as every harness point does: first calls pay for lazy imports.
            await run_closed_loop(c, _specs(concurrency, 8, chat=chat), concurrency)
            return await run_closed_loop(c, specs, concurrency)

    phase = run_async(go())
    assert len(phase.records) == n and all(r.ok for r in phase.records)
    log = orjson.loads(urllib.request.urlopen(scripted_server + "/x/log").read())
    # Causality: each request was stamped as sent before the server received it.
    assert all(r.issue_ts <= r.send_ts < log[r.request_id]["received"] for r in phase.records)
    m = point_metrics(phase.records, phase.duration_s, GpuCount(1))
    truth = _truth(log, phase.records, phase.duration_s)
    assert not phase.health.bottleneck, phase.health  # so p99 stamp error <= 1 ms
    assert phase.health.stamp_err_p999_ms < 25.0, phase.health  # the extra bound stays small
    bad = _off_truth(m, truth, phase.health)
    assert not bad, f"metrics off the truth at c={concurrency}: {bad} ({phase.health})"
    assert m["total_output_tokens"] == sum(s.max_tokens for s in specs)  # from usage
    assert m["num_failed"] == 0
    # Multi-token chunks: fewer chunks than tokens, and TPOT is per token, not per chunk.
    assert m["mean_itl"] > m["mean_tpot"] * 1.5
    assert math.isclose(m["median_intvty"], 1 / m["median_tpot"])
    # The client held the requested concurrency.
    assert phase.health.inflight_mean == pytest.approx(concurrency, rel=0.15)


def test_lockstep_burst_is_accurate_or_flagged(scripted_server: str) -> None:
    """64 identical requests finish in the same instant, and each completion costs the client
    a new request (~0.3 ms of CPU here): the loop stalls. The client must then say so."""
    specs = _specs(256, max_tokens=60, spread=False)

    async def go():
        async with StreamingClient(ClientSettings(scripted_server)) as c:
            return await run_closed_loop(c, specs, 64)

    phase = run_async(go())
    log = orjson.loads(urllib.request.urlopen(scripted_server + "/x/log").read())
    m = point_metrics(phase.records, phase.duration_s, GpuCount(1))
    truth = _truth(log, phase.records, phase.duration_s)
    bad = _off_truth(m, truth, phase.health)
    assert not bad or phase.health.bottleneck, (phase.health, bad)
