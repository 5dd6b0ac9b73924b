"""A point's time series (harness/sweep/series.py, docs/series.md): exact in-flight and send rate
from the records, loop lag from the probe, server scrapes under neutral names, the file's
fixed columns, and run_point writing it before the point's line."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.client.health import ClientHealth
from harness.client.streaming import PhaseResult
from harness.config.compose import compose_sweep
from harness.engines.counters import ENGINE_COUNTERS
from harness.engines.hints import EngineHints
from harness.engines.registry import make_adapter
from harness.record.metrics import GpuCount
from harness.record.results import RunDir
from harness.record.validity import settings_for
from harness.records import RequestRecord
from harness.sweep import series
from harness.sweep.point import JobContext
from harness.sweep.runner import choose_telemetry, plan_points, run_point
from harness.telemetry.base import GpuReading
from harness.workloads.base import LoadLevel, Measurement, Target, Workload
from tests.helpers import NoDeployment


def _req(i: int, send: float, end: float, phase: str = "measured") -> RequestRecord:
    r = RequestRecord(f"r{i}", phase, 100, 8)
    r.send_ts, r.end_ts, r.http_status = send, end, 200
    r.chunk_ts = [send + 0.01 * (k + 1) for k in range(8)]
    r.first_token_ts, r.last_token_ts = r.chunk_ts[0], r.chunk_ts[-1]
    r.prompt_tokens, r.completion_tokens = 100, 8
    return r


def _named(rows: list, name: str) -> list[tuple[float, float]]:
    return [(round(r[0], 9), r[4]) for r in rows if r[3] == name]


def test_inflight_is_the_exact_step_function_of_the_records() -> None:
    recs = [_req(0, 10.0, 12.0), _req(1, 10.5, 11.0), _req(2, 11.0, 13.5),
            _req(3, 9.0, 9.8, phase="warmup")]
    rows = series.client_rows(recs, t0=10.0)
    # warmup at -1.0; at 11.0 one request ends as another starts: the level stays 2
    assert _named(rows, "inflight") == [(-1.0, 1.0), (-0.2, 0.0), (0.0, 1.0), (0.5, 2.0),
                                        (1.0, 2.0), (2.0, 1.0), (3.5, 0.0)]
    assert _named(rows, "send_rate") == [(-1.0, 1.0), (0.0, 2.0), (1.0, 1.0)]


def test_a_request_without_times_is_left_out_and_loop_lag_is_kept() -> None:
    lost = RequestRecord("lost", "measured", 100, 8)  # never sent: no times at all
    rows = series.client_rows([lost, _req(1, 5.0, 6.0)], t0=5.0,
                              lag_samples=[(5.25, 0.4), (5.5, 1.5), (5.75, 0.2), (7.1, 9.0),
                                           (4.5, 3.0)])
    assert _named(rows, "inflight") == [(0.0, 1.0), (1.0, 0.0)]
    # the worst reading of each 1 s bin from the measured start; warmup bins negative
    assert _named(rows, "loop_lag_ms") == [(-1.0, 3.0), (0.0, 1.5), (2.0, 9.0)]


def test_server_scrapes_become_neutral_names() -> None:
    s = {'vllm:num_requests_running{engine="0",model_name="m"}': 3.0,
         'vllm:num_requests_running{engine="1",model_name="m"}': 2.0,
         'vllm:num_requests_waiting{engine="0",model_name="m"}': 4.0,
         'vllm:kv_cache_usage_perc{engine="0",model_name="m"}': 0.25,
         'vllm:kv_cache_usage_perc{engine="1",model_name="m"}': 0.5,
         'vllm:prompt_tokens_total{engine="0",model_name="m"}': 1000.0,
         'vllm:prefix_cache_hits_total{engine="0",model_name="m"}': 300.0,
         'vllm:prefix_cache_queries_total{engine="0",model_name="m"}': 900.0,
         'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"}': 40.0}
    rows = series.server_rows(ENGINE_COUNTERS["vllm"], [(101.0, s)], t0=100.0)
    got = {r[3]: (r[0], r[4]) for r in rows}
    assert got["num_requests_running"] == (1.0, 5.0)  # summed over ranks
    assert got["num_requests_waiting"] == (1.0, 4.0)
    assert got["prompt_tokens_total"] == (1.0, 1000.0)
    assert got["prefix_hits_total"] == (1.0, 300.0)
    assert got["prefix_queries_total"] == (1.0, 900.0)  # hits and queries, as vLLM counts
    assert got["spec_drafts_total"] == (1.0, 40.0)
    if getattr(getattr(ENGINE_COUNTERS["vllm"], "cache", None), "kv_usage", None):
        assert got["kv_usage"] == (1.0, 0.5)  # max over ranks, as AgentX aggregates it
    assert all(r[1] == "server" and r[2] == "" for r in rows)


def test_an_attached_endpoint_is_read_as_the_engine_it_is() -> None:
    s = {"llamacpp:requests_processing": 2.0, "llamacpp:requests_deferred": 1.0,
         "llamacpp:tokens_predicted_total": 64.0}
    rows = series.server_rows(ENGINE_COUNTERS["endpoint"], [(1.0, s)], t0=0.0)
    got = {r[3]: r[4] for r in rows}
    assert got["num_requests_running"] == 2.0 and got["num_requests_waiting"] == 1.0
    assert got["generation_tokens_total"] == 64.0


def test_the_file_has_the_fixed_columns_and_round_trips() -> None:
    gpu = [GpuReading(10.5, "1", 300.0, 90.0, None), GpuReading(10.5, "0", 310.0, None, 2048.0)]
    rows = series.gpu_rows(gpu, t0=10.0) + series.client_rows([_req(0, 10.0, 11.0)], 10.0)
    t = pq.read_table(io.BytesIO(series.parquet_bytes(series.table(rows))))
    assert t.column_names == ["t_s", "source", "device", "name", "value"]
    assert [str(f.type) for f in t.schema] == ["double", "string", "string", "string", "double"]
    back = t.to_pylist()
    assert len(back) == len(rows) == 4 + 3  # None readings are no rows
    assert {"t_s": 0.5, "source": "gpu", "device": "0", "name": "power_w",
            "value": 310.0} in back
    empty = pq.read_table(io.BytesIO(series.parquet_bytes(series.table([]))))
    assert empty.num_rows == 0 and empty.column_names == t.column_names


def test_summary_figures_cover_the_measured_window_only() -> None:
    rows = [(-1.0, "server", "", "num_requests_running", 50.0),
            (0.0, "server", "", "num_requests_running", 2.0),
            (1.0, "server", "", "num_requests_running", 4.0),
            (1.0, "gpu", "0", "util_pct", 80.0), (1.0, "gpu", "1", "util_pct", 60.0),
            (9.0, "gpu", "0", "util_pct", 0.0)]
    out = series.summary(rows, window_s=2.0)
    assert out == {"series_running_mean": 3.0, "series_gpu_util_mean": 70.0}


class TwoPhaseWorkload(Workload):
    kind = "two-phase"

    def hints(self) -> EngineHints:
        return EngineHints(prefix_caching=False, longest_request_tokens=200)

    def prepare(self, levels, body) -> None:
        pass

    def run(self, target: Target, level: LoadLevel, on_done=None) -> Measurement:
        h = ClientHealth(stamp_err_p99_ms=0.2, cpu_share=0.3)
        h.lag_samples = [(10.5, 0.3)]
        warm = PhaseResult([_req(9, 8.0, 9.0, "warmup")], 8.0, 9.0, 1.7e9, h)
        meas = PhaseResult([_req(i, 10.0 + i, 10.5 + i) for i in range(4)], 10.0, 14.0,
                           1.7e9, h)
        return Measurement(warm, meas, {}, {})


class Session(NoDeployment):
    base_url, version = "http://127.0.0.1:9", "fake 1.0"

    def scrape(self) -> dict:
        return {"vllm:num_requests_running": 1.0, "vllm:generation_tokens_total": 8.0}

    def alive(self) -> bool:
        return True


def test_run_point_writes_the_series_before_the_point_line(tmp_path: Path) -> None:
    sc = compose_sweep(["engine=endpoint", "engine.url=http://127.0.0.1:9", "run_id=unit",
                        "concurrency=[1]", "telemetry.source=none"])
    wl = TwoPhaseWorkload()
    ctx = JobContext(sc, "unit", "job0", make_adapter(sc, hints=wl.hints()), wl, 1, "rev",
                     settings_for(sc), GpuCount(1),
                     telemetry=choose_telemetry(sc, lambda key: "the command line"))
    run = RunDir.open(tmp_path, "unit")
    rec = run_point(ctx, Session(), plan_points(sc)[0], run)
    t = pq.read_table(run.root / "series" / f"{rec.point_id}.parquet").to_pylist()
    client = [r for r in t if r["source"] == "client"]
    assert min(r["t_s"] for r in client) == pytest.approx(-2.0)  # warmup before the window
    assert {r["name"] for r in client} == {"inflight", "send_rate", "loop_lag_ms"}
    server = [r for r in t if r["source"] == "server"]
    assert {r["name"] for r in server} >= {"num_requests_running", "generation_tokens_total"}
    assert not [r for r in t if r["source"] == "gpu"]
    assert rec.metrics["power_valid"] == 0 and rec.extras["power_source"] == "none"
    assert rec.extras["power_reasons"] == ["telemetry.source=none"]
    assert not (run.root / "power").exists()
    assert all(math.isfinite(r["value"]) for r in t)
    assert rec.valid  # power is best-effort unless telemetry.require_power


def test_require_power_on_a_host_without_telemetry_flags_the_point(tmp_path: Path) -> None:
    sc = compose_sweep(["engine=endpoint", "engine.url=http://127.0.0.1:9", "run_id=unit",
                        "concurrency=[1]", "telemetry.source=none",
                        "telemetry.require_power=true"])
    wl = TwoPhaseWorkload()
    ctx = JobContext(sc, "unit", "job0", make_adapter(sc, hints=wl.hints()), wl, 1, "rev",
                     settings_for(sc), GpuCount(1),
                     telemetry=choose_telemetry(sc, lambda key: "the command line"))
    rec = run_point(ctx, Session(), plan_points(sc)[0], RunDir.open(tmp_path, "unit"))
    assert rec.status == "ok" and [r.name for r in rec.validity.failed] == ["power_valid"]
