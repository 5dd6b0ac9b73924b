"""What sampling through a point costs the client: chunks/s and client CPU share with and
without the samplers run_point starts (the 1 s /metrics scrape and accelerator telemetry),
against the fast server, plus the time to build the point's series afterwards.

Load: `harness.testing.fast_sse_server` pinned to the other core, as benchmarks/client_ingest.py.
Samplers: `MetricsSampler` scraping a /metrics page of `--metric-lines` Prometheus lines from
its own process (`python -m http.server`), and `NvidiaSmiSampler` reading the telemetry
emulator's nvidia-smi loop (harness/testing/telemetry_emulator.py, 8 GPUs). Both run as threads
in the client's process, as in a sweep, so what they cost shows up in the client's figures.
Runs alternate off/on `--repeats` times per concurrency.

Run: python benchmarks/sampling_cost.py [--seconds 6] [--concurrency 64 256] [--period 1.0]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson

from harness.client.closed_loop import run_closed_loop
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.engines import prometheus
from harness.engines.counters import ENGINE_COUNTERS
from harness.engines.process import get_text
from harness.engines.sampler import MetricsSampler
from harness.records import RequestSpec
from harness.sweep import series
from harness.telemetry import nvidia_smi
from harness.telemetry.nvidia_smi import NvidiaSmiSampler
from harness.testing.spawn import spawn_server
from harness.testing.telemetry_emulator import install, nvidia_row


def _metrics_text(lines: int) -> str:
    """A vLLM-shaped page: the gauges and counters the series reads, padded with histograms."""
    out = ['vllm:num_requests_running{engine="0",model_name="m"} 12',
           'vllm:num_requests_waiting{engine="0",model_name="m"} 3',
           'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.42',
           'vllm:prompt_tokens_total{engine="0",model_name="m"} 123456',
           'vllm:generation_tokens_total{engine="0",model_name="m"} 65432']
    for i in range(lines - len(out)):
        out.append(f'vllm:e2e_request_latency_seconds_bucket{{engine="0",le="{i}"}} {i * 7}')
    return "\n".join(out) + "\n"


@contextlib.contextmanager
def metrics_server(text: str) -> Iterator[str]:
    with tempfile.TemporaryDirectory() as d:
        Path(d, "metrics").write_text(text)
        proc = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind",
                                 "127.0.0.1", "--directory", d], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...)"
            yield f"http://127.0.0.1:{line.split(' port ')[1].split()[0]}/metrics"
        finally:
            proc.terminate()
            proc.wait(timeout=5)


def _specs(n: int, max_tokens: int) -> list[RequestSpec]:
    body = orjson.dumps({"prompt": "x", "max_tokens": max_tokens, "stream": True})
    return [RequestSpec(f"r{i}", "/v1/completions", body, 1, max_tokens) for i in range(n)]


def one_run(port: int, concurrency: int, seconds: float, max_tokens: int,
            samplers: list) -> dict[str, float]:
    deadline = time.perf_counter() + seconds

    def timed():
        for s in _specs(20_000, max_tokens):
            if time.perf_counter() > deadline:
                return
            yield s

    async def go():
        async with StreamingClient(ClientSettings(f"http://127.0.0.1:{port}")) as c:
            return await run_closed_loop(c, timed(), concurrency)

    with contextlib.ExitStack() as stack:
        for s in samplers:
            stack.enter_context(s)
            if isinstance(s, NvidiaSmiSampler):  # as run_point: started before the load
                s.wait_ready(5.0)
        deadline = time.perf_counter() + seconds
        phase = run_async(go())
    chunks = sum(len(r.chunk_ts) for r in phase.records)
    return {"chunks_per_s": chunks / phase.duration_s, "cpu": phase.health.cpu_share,
            # client CPU (samplers' threads included) per chunk: robust where the machine is
            # shared, as throughput then follows the scheduler more than the client
            "cpu_us_per_chunk": phase.health.cpu_share * phase.duration_s / max(chunks, 1) * 1e6,
            "lag_p99": phase.health.lag_p99_ms, "records": phase.records,
            "t0": phase.start_ts, "window": phase.duration_s}


def build_ms(run: dict, metrics: MetricsSampler, gpu: NvidiaSmiSampler) -> tuple[float, int]:
    t = time.perf_counter()
    rows = (series.server_rows(ENGINE_COUNTERS["vllm"], metrics.samples, run["t0"])
            + series.client_rows(run["records"], run["t0"])
            + series.gpu_rows(gpu.readings, run["t0"]))
    data = series.parquet_bytes(series.table(rows))
    return (time.perf_counter() - t) * 1000, len(data)


def isolated_cpu_ms(scrape, n: int = 40) -> tuple[float, float]:
    """CPU milliseconds the client's process spends per /metrics scrape (HTTP GET + parse) and
    per nvidia-smi period (8 rows parsed), measured alone: robust to a busy machine, where the
    with/without throughput comparison is noisy."""
    t = time.process_time()
    for _ in range(n):
        scrape()
    per_scrape = (time.process_time() - t) * 1000 / n
    trace = {"t0": time.time(), "devices": {str(i): [400.0, 0.0] for i in range(8)}}
    rows = [nvidia_row(trace, str(i), time.time()) for i in range(8)]
    t = time.process_time()
    for _ in range(n * 10):
        for row in rows:
            nvidia_smi.parse_line(row, 0.0)
    return per_scrape, (time.process_time() - t) * 1000 / (n * 10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    p.add_argument("--max-tokens", type=int, default=2000)
    p.add_argument("--period", type=float, default=1.0)
    p.add_argument("--metric-lines", type=int, default=400)
    p.add_argument("--repeats", type=int, default=2)
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server_env = {"FAST_SSE_CPU": str(cpus[-1])} if len(cpus) > 1 else {}
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[0]})
    series.table([(0.0, "client", "", "inflight", 0.0)])  # pyarrow's first-call set-up: a
    # sweep has paid it writing requests before any series is built
    bin_dir = Path(tempfile.mkdtemp(prefix="sampling-cost-"))
    os.environ["PATH"] = install(bin_dir, {"t0": time.time(),
                                           "devices": {str(i): [400.0, 0.0] for i in range(8)}})
    with (spawn_server("harness.testing.fast_sse_server", "--events-per-tick", "48",
                       "--tick-ms", "2", env=server_env) as port,
          metrics_server(_metrics_text(a.metric_lines)) as url):
        def scrape() -> prometheus.Sample:
            text = get_text(url)
            return prometheus.parse(text) if text else {}

        scrape_ms, smi_ms = isolated_cpu_ms(scrape)
        print(f"sampler CPU alone: {scrape_ms:.2f} ms per scrape of {a.metric_lines} lines, "
              f"{smi_ms:.3f} ms per 8-GPU nvidia-smi period: "
              f"{(scrape_ms + smi_ms) / a.period / 10:.2f}% of a core at one sample per "
              f"{a.period:g} s")
        print(f"{'conc':>5} {'samplers':>8} {'chunks/s':>10} {'cpu':>5} {'us/chunk':>8} "
              f"{'lag p99':>8} "
              f"{'scrapes':>7} {'gpu rows':>8} {'build ms':>8} {'bytes':>8}")
        for c in a.concurrency:
            figs: dict[bool, list[dict]] = {False: [], True: []}
            for rep in range(a.repeats):
                for on in ((False, True) if rep % 2 == 0 else (True, False)):
                    metrics, gpu = MetricsSampler(scrape, a.period), NvidiaSmiSampler(a.period)
                    r = one_run(port, c, a.seconds, a.max_tokens, [metrics, gpu] if on else [])
                    ms, size = build_ms(r, metrics, gpu) if on else (float("nan"), 0)
                    figs[on].append(r)
                    print(f"{c:>5} {'on' if on else 'off':>8} {r['chunks_per_s']:>10,.0f} "
                          f"{r['cpu']:>5.2f} {r['cpu_us_per_chunk']:>8.3f} {r['lag_p99']:>8.2f} "
                          f"{len(metrics.samples) if on else 0:>7} "
                          f"{len(gpu.readings) if on else 0:>8} {ms:>8.1f} {size:>8}")
            off = np.median([r["chunks_per_s"] for r in figs[False]])
            on_ = np.median([r["chunks_per_s"] for r in figs[True]])
            cpu_off = np.median([r["cpu_us_per_chunk"] for r in figs[False]])
            cpu_on = np.median([r["cpu_us_per_chunk"] for r in figs[True]])
            print(f"{c:>5} median chunks/s off {off:,.0f} on {on_:,.0f} "
                  f"({(on_ / off - 1) * 100:+.1f}%); client CPU per chunk off {cpu_off:.3f} us "
                  f"on {cpu_on:.3f} us ({(cpu_on / cpu_off - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
