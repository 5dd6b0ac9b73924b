"""Injected acceptance read back from each engine's own metrics, on an emulator that writes them
as the engine's source does (harness.testing.engine_emulator): real streaming requests over
loopback, /metrics scraped before and after (and sampled during, for gauge engines)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import aiohttp
import orjson
import pytest

from harness.engines import prometheus
from harness.engines.counters import (
    ENGINE_COUNTERS,
    RealisedAcceptance,
    independent_draws,
    realised_acceptance,
)
from harness.engines.process import get_text
from harness.speculation.acceptance import synthetic_rates
from harness.speculation.truncation import truncated_al
from harness.speculation.verify import verify
from harness.testing.spawn import spawn_server

K = 3
MAX_TOKENS = 256


@dataclass
class Window:
    before: prometheus.Sample
    after: prometheus.Sample
    samples: list[tuple[float, prometheus.Sample]]
    completion_tokens: int


async def _stream(session: aiohttp.ClientSession, url: str, max_tokens: int) -> int:
    body = {"model": "emulated", "messages": [{"role": "user", "content": "say something"}],
            "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}
    usage = None
    async with session.post(url + "/v1/chat/completions", json=body) as resp:
        assert resp.status == 200
        async for line in resp.content:
            if line.startswith(b"data: {"):
                usage = orjson.loads(line[6:]).get("usage") or usage
    assert usage is not None, "no usage chunk (stream_options.include_usage)"
    return int(usage["completion_tokens"])


async def _point(url: str, path: str, n: int, conc: int, max_tokens: int = MAX_TOKENS
                 ) -> Window:
    """Warmup, a scrape, n requests at `conc` in flight with /metrics sampled throughout
    (as the runner should: the gauge covers only the last interval), a scrape."""
    async with aiohttp.ClientSession() as s:
        async def scrape() -> prometheus.Sample:
            async with s.get(url + path) as r:
                return prometheus.parse(await r.text())

        await asyncio.gather(*(_stream(s, url, 8) for _ in range(conc)))
        before, samples, done = await scrape(), [], asyncio.Event()

        async def sampler() -> None:
            while not done.is_set():
                samples.append((time.monotonic(), await scrape()))
                await asyncio.sleep(0.002)

        sem = asyncio.Semaphore(conc)

        async def one() -> int:
            async with sem:
                return await _stream(s, url, max_tokens)

        task = asyncio.ensure_future(sampler())
        tokens = await asyncio.gather(*(one() for _ in range(n)))
        done.set()
        await task
        return Window(before, await scrape(), samples, sum(tokens))


def _run(engine: str, dp: int, al: float, *extra: str, max_tokens: int = MAX_TOKENS,
         n: int | None = None) -> tuple[Window, RealisedAcceptance]:
    c = ENGINE_COUNTERS[engine]
    # SGLang draws one length per batch step: small batches and more requests, so the window
    # holds enough independent draws (~3000 steps); the other engines draw per request.
    sglang = engine == "sglang"
    n_default, conc = (128, 4 * dp) if sglang else (64, 8 * dp)
    n = n or n_default
    with spawn_server("harness.testing.engine_emulator", "--engine", engine, "--dp", str(dp),
                      "--al", str(al), "--k", str(K), "--step-ms", "0", *extra) as port:
        w = asyncio.run(_point(f"http://127.0.0.1:{port}", c.metrics_path, n, conc,
                               max_tokens))
    assert w.completion_tokens == n * max_tokens
    return w, realised_acceptance(c, w.before, w.after, w.samples, k=K)


def _draws(engine: str, r: RealisedAcceptance) -> float:
    """Independent draws behind the realised AL: SGLang's come per batch step (its gauge's
    drafts are steps already; its request counter is divided by the batch per rank, 4)."""
    n = independent_draws(ENGINE_COUNTERS[engine], r, mean_batch=4)
    assert n is not None
    return n


CASES = [(e, dp, al) for e in ("sglang", "vllm", "trtllm", "atom")
         for dp, al in ((1, 1.5), (4, 2.5), (1, 3.5))]


@pytest.mark.parametrize(("engine", "dp", "al"), CASES,
                         ids=[f"{e}-dp{dp}-al{al}" for e, dp, al in CASES])
def test_injected_al_is_realised_and_verified(engine: str, dp: int, al: float) -> None:
    w, r = _run(engine, dp, al)
    assert r.al is not None, r.reason
    assert r.source == ("gauge-sampled" if engine == "sglang" else "counters")
    assert abs(r.al / al - 1) < 0.02, r
    v = verify(al, r.al, _draws(engine, r), k=K)
    assert v.ok, v.reason
    if engine in ("sglang", "vllm") and dp > 1:  # per-rank values, one per dp rank
        assert len(r.per_rank) == dp
        assert all(abs(x / al - 1) < 0.05 for x in r.per_rank.values()), r.per_rank
    if engine == "sglang" and dp > 1:
        # The bug: summing the per-rank gauge over label sets reads dp x AL.
        summed = prometheus.total(w.after, "sglang:spec_accept_length")
        assert summed == pytest.approx(dp * al, rel=0.05)
        assert r.al == pytest.approx(summed / dp, rel=0.05)


@pytest.mark.parametrize("engine", ["sglang", "vllm", "trtllm", "atom"])
def test_biased_engine_fails_verification(engine: str) -> None:
    al = 2.5
    _, r = _run(engine, 4, al, "--al-bias", "-0.125")
    assert r.al is not None, r.reason
    v = verify(al, r.al, _draws(engine, r), k=K)
    assert not v.ok
    assert "below the requested 2.5" in v.reason


@pytest.mark.parametrize("extra", [(), ("--sglang-verify-counter",)], ids=["gauge", "counter"])
def test_sglang_reads_short_replies_low_and_is_verified_against_that(extra) -> None:
    """SGLang counts only the tokens a request's finishing step kept, in its gauge and in its
    generation counter alike: 5 decode tokens at AL 2.5 (2 or 3 a step) take 2.25 steps on
    average, so the metric reads ~2.22. Judged against the requested 2.5 an honest engine
    fails (the old behaviour, what AgentX's short replies did through the router); against
    harness.speculation.truncation's expectation it passes."""
    _, r = _run("sglang", 2, 2.5, *extra, max_tokens=6, n=512)
    assert r.al is not None and r.truncated_at_finish, r
    expected = truncated_al(synthetic_rates(2.5, K), [5])
    assert expected == pytest.approx(5 / 2.25)
    draws = _draws("sglang", r)
    assert not verify(2.5, r.al, draws, k=K, min_drafts=100).ok
    v = verify(2.5, r.al, draws, k=K, min_drafts=100, expected=expected)
    assert v.ok, (v.reason, r)


def test_sglang_newer_verify_counter() -> None:
    """Newer SGLang also counts verify calls per request: counters win over the gauge."""
    _, r = _run("sglang", 4, 2.5, "--sglang-verify-counter")
    assert r.source == "counters" and r.al is not None
    # accepted tokens past max_tokens are not counted: a slight low bias, within 2%
    assert abs(r.al / 2.5 - 1) < 0.02, r
    assert verify(2.5, r.al, _draws("sglang", r), k=K).ok


def test_trtllm_serves_prometheus_apart_from_iteration_json() -> None:
    with spawn_server("harness.testing.engine_emulator", "--engine", "trtllm") as port:
        async def go() -> tuple[str, list]:
            async with aiohttp.ClientSession() as s:
                url = f"http://127.0.0.1:{port}"
                await _stream(s, url, 32)
                async with s.get(url + "/prometheus/metrics") as r:
                    text = await r.text()
                async with s.get(url + "/metrics") as r:
                    stats = await r.json()
                return text, stats

        text, stats = asyncio.run(go())
    assert "# TYPE trtllm_spec_decode_num_draft_tokens_total counter" in text
    assert 'model_name="undefined"' in text
    assert stats and "specDecodingStats" in stats[0]


SHARED = "w " * 1024  # 2048 characters: 8 whole cache blocks of 256


async def _prompts(url: str, path: str, texts: list[str]) -> Window:
    """One request per text, one at a time (so the round robin and the cache order are
    known), with /metrics sampled after each."""
    async with aiohttp.ClientSession() as s:
        async def scrape() -> prometheus.Sample:
            async with s.get(url + path) as r:
                return prometheus.parse(await r.text())

        before, samples = await scrape(), []
        for text in texts:
            body = {"model": "emulated", "messages": [{"role": "user", "content": text}],
                    "max_tokens": 8, "stream": True}
            async with s.post(url + "/v1/chat/completions", json=body) as resp:
                await resp.read()
            samples.append((time.monotonic(), await scrape()))
        return Window(before, await scrape(), samples, 0)


@pytest.mark.parametrize("engine", ["sglang", "vllm", "trtllm", "atom"])
def test_cache_hits_and_kv_usage_read_through_each_engines_series(engine: str) -> None:
    from harness.engines.server_cache import server_cache_facts

    c = ENGINE_COUNTERS[engine]
    # 12 prompts, 10 blocks each (8 shared + 2 own), round robin over 2 ranks: each rank's
    # first prompt misses, the other 10 hit 8 of 10 blocks -> 10 x 0.8 / 12 of all tokens
    texts = [SHARED + (f"u{i:04d} " * 86)[:512] for i in range(12)]
    with spawn_server("harness.testing.engine_emulator", "--engine", engine, "--dp", "2",
                      "--kv-pool-tokens", "1000") as port:
        w = asyncio.run(_prompts(f"http://127.0.0.1:{port}", c.metrics_path, texts))
    f = server_cache_facts(c, w.before, w.after, w.samples)
    assert f["server_hit_rate_device"] == pytest.approx(10 * 0.8 / 12, abs=0.03), f
    assert f.get("server_hit_rate_host", 0.0) == 0.0
    assert f["server_hit_rate_overall"] == pytest.approx(f["server_hit_rate_device"])
    assert f["server_kv_usage_max"] is not None and 0.0 <= f["server_kv_usage_max"] <= 1.0
    if engine in ("sglang", "trtllm"):
        assert f["server_kv_pool_tokens"] == 2000  # two ranks' pools


def test_sglang_host_tier_hits_are_told_apart_from_device_hits() -> None:
    from harness.engines.server_cache import server_cache_facts

    # A device cache of 10 blocks: prompts P, Q, P, Q... each evicts the other's blocks to
    # the host tier, so from the third prompt on the 8 shared blocks come from the host.
    p, q = "p " * 1024, "q " * 1024
    texts = [(p if i % 2 == 0 else q) + (f"u{i:04d} " * 86)[:512] for i in range(10)]
    c = ENGINE_COUNTERS["sglang"]
    with spawn_server("harness.testing.engine_emulator", "--engine", "sglang",
                      "--cache-blocks", "10", "--host-blocks", "100") as port:
        w = asyncio.run(_prompts(f"http://127.0.0.1:{port}", c.metrics_path, texts))
    f = server_cache_facts(c, w.before, w.after, w.samples)
    assert f.get("server_hit_rate_device", 0.0) == 0.0
    assert f["server_hit_rate_host"] == pytest.approx(8 * 0.8 / 10, abs=0.03), f
    assert f["server_host_kv_usage_max"] > 0


def _post(url: str, body: dict, headers: dict[str, str] | None = None) -> int:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url + "/v1/completions", orjson.dumps(body),
                                 {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_sgl_router_dp_aware_pins_a_routing_key_to_one_rank_in_the_body() -> None:
    """sgl-router --dp-aware hashes X-SMG-Routing-Key (not x-correlation-id, which only names
    the request) and writes the rank into the body as data_parallel_rank; the engine runs the
    request on that rank. Without a key the router picks a rank at random."""
    body = {"model": "emulated", "prompt": "hello there", "max_tokens": 2}
    with spawn_server("harness.testing.engine_emulator", "--engine", "vllm", "--dp", "2",
                      "--step-ms", "0") as eport, \
            spawn_server("harness.testing.router_emulator", "--worker-urls",
                         f"http://127.0.0.1:{eport}", "--flavor", "sglang", "--dp-aware",
                         "--intra-node-data-parallel-size", "2") as rport:
        engine, router = f"http://127.0.0.1:{eport}", f"http://127.0.0.1:{rport}"

        def prompts() -> dict[str, float]:
            sample = prometheus.parse(get_text(engine + "/metrics") or "")
            return {r: sample.get(f'vllm:prompt_tokens_total{{engine="{r}",model_name='
                                  f'"emulated"}}', 0.0) for r in ("0", "1")}

        for _ in range(6):
            assert _post(router, body, {"X-SMG-Routing-Key": "session-a",
                                        "x-correlation-id": "ignored"}) == 200
        pinned = prompts()
        assert sorted(v > 0 for v in pinned.values()) == [False, True], pinned
        for i in range(24):
            assert _post(router, body, {"x-correlation-id": f"c{i}"}) == 200
        assert all(v > pinned[r] for r, v in prompts().items())  # random: both ranks
        assert _post(engine, {**body, "data_parallel_rank": 2}) == 400  # out of range
