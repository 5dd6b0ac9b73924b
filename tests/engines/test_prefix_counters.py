"""The prefix-cache hit ratio from each engine's counter semantics (harness.engines.counters
.prefix_counts): hits never exceed queried tokens, and the ratio is the one the engine's own
per-request figures give. llama.cpp through the real embedded server (its queries counter
leaves the hits out); vLLM and SGLang through the emulator that counts as their source does
(harness.testing.engine_emulator)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.request

import aiohttp
import pytest

from harness.engines import prometheus
from harness.engines.counters import ENGINE_COUNTERS, prefix_counts, prefix_hit_rate
from harness.engines.process import free_port
from harness.testing.spawn import spawn_server

SHARED = "w " * 1024  # 2048 characters: 8 whole cache blocks of 256 in the emulator


async def _prompts(url: str, path: str, texts: list[str]) -> list[prometheus.Sample]:
    """A scrape, then one request per text, one at a time, a scrape after each."""
    async with aiohttp.ClientSession() as s:
        async def scrape() -> prometheus.Sample:
            async with s.get(url + path) as r:
                return prometheus.parse(await r.text())

        out = [await scrape()]
        for text in texts:
            body = {"model": "emulated", "messages": [{"role": "user", "content": text}],
                    "max_tokens": 8, "stream": True}
            async with s.post(url + "/v1/chat/completions", json=body) as resp:
                await resp.read()
            out.append(await scrape())
        return out


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_hits_over_queries_is_a_ratio_on_emulated_engines(engine: str) -> None:
    c = ENGINE_COUNTERS[engine]
    # 12 prompts of 10 blocks (8 shared), one rank: the first misses, 11 hit 8 of 10 blocks
    texts = [SHARED + (f"u{i:04d} " * 86)[:512] for i in range(12)]
    with spawn_server("harness.testing.engine_emulator", "--engine", engine) as port:
        scrapes = asyncio.run(_prompts(f"http://127.0.0.1:{port}", c.metrics_path, texts))
    counts = [prefix_counts(c, s) for s in scrapes[1:]]
    assert all(h is not None and q is not None and h <= q for h, q in counts), counts
    (h0, q0), (h1, q1) = prefix_counts(c, scrapes[0]), counts[-1]
    ratio = ((h1 or 0) - (h0 or 0)) / (q1 - (q0 or 0))
    assert ratio == pytest.approx(11 * 0.8 / 12, abs=0.03)
    assert prefix_hit_rate(c, scrapes[0], scrapes[-1]) == pytest.approx(ratio)


def _post(port: int, body: dict) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def _metrics(port: int) -> prometheus.Sample:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return prometheus.parse(r.read().decode())


def test_llamacpp_hits_are_counted_beside_its_prompt_tokens_not_inside() -> None:
    from harness.config.compose import compose_sweep
    from harness.engines.weights import gguf_path

    model = gguf_path(compose_sweep(["run_id=unit"]).model)
    port = free_port()
    cfg = {"model_path": str(model), "alias": "m", "port": port, "n_parallel": 1,
           "n_ctx": 1024, "host": "127.0.0.1", "threads": 1, "params": {}}
    proc = subprocess.Popen([sys.executable, "-m", "harness.engines.llamacpp_server",
                             json.dumps(cfg)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), \
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                break
            time.sleep(0.3)
        c = ENGINE_COUNTERS["llamacpp"]
        before = _metrics(port)
        prefix = [1000 + (i * 37) % 30000 for i in range(200)]
        cached = evaluated = 0
        for i in range(4):  # one shared 200-token prefix, a new 8-token tail each time
            r = _post(port, {"prompt": prefix + [500 + i] * 8, "n_predict": 2,
                             "cache_prompt": True, "temperature": 0})
            cached += r["timings"]["cache_n"]
            evaluated += r["timings"]["prompt_n"]
        after = _metrics(port)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert cached >= 3 * 190  # the later requests reused the prefix
    (h0, q0), (h1, q1) = prefix_counts(c, before), prefix_counts(c, after)
    # The counters say what the server's per-request timings say...
    assert (h1 - (h0 or 0), q1 - (q0 or 0)) == (cached, cached + evaluated)
    assert prefix_hit_rate(c, before, after) == pytest.approx(cached / (cached + evaluated))
    # ...and the queries counter read alone would put the ratio far above 1.
    raw = c.prefix_cache.queries.total(after) - (c.prefix_cache.queries.total(before) or 0)
    assert (h1 - (h0 or 0)) / raw > 1.0
