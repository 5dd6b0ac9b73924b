"""Timestamped (open-loop) replay on the scripted server: every scheduled request is sent, at
its recorded time divided by the speed-up, whether or not the server keeps up; how late each
send was is recorded and summarised on the point."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.config.errors import ConfigError
from harness.record.results import read_points
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server
from harness.workloads.timestamped import arrivals
from harness.workloads.traces import load_traces
from tests.helpers import harness

pytestmark = pytest.mark.slow
MOONCAKE = "scenarios/traces/mooncake/conversation_trace.head300.jsonl"


def _run(tmp_path, run_id: str, *server_args: str,
         speedup: str = "10") -> tuple[dict, pd.DataFrame]:
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms", "1",
                      "--tokenizer", str(tokenizer_file()), *server_args) as port:
        r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}",
                    "scenarios=timestamped-mooncake", "concurrency=[1]",
                    f"scenario.speedup={speedup}", "scenario.duration_s=4",
                    f"results_dir={tmp_path}", f"run_id={run_id}")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [p] = read_points(tmp_path / run_id)
    df = pd.read_parquet(tmp_path / run_id / "requests" / f"{p['point_id']}.parquet")
    return p, df


def _schedule(speedup: float, window: float) -> list[float]:
    offsets = [t for t, _ in arrivals(load_traces(MOONCAKE), "w")]
    return [t / speedup for t in offsets if t / speedup <= window]


def test_sends_follow_the_recorded_arrivals(tmp_path) -> None:
    p, df = _run(tmp_path, "keep")
    want = _schedule(10.0, 4.0)
    assert len(df) == len(want) == p["num_requests"] and p["num_failed"] == 0
    tags = [json.loads(t) for t in df["tags"]]
    sched = sorted(t["scheduled_s"] for t in tags)
    assert sched == pytest.approx(want)
    lag = pd.Series([t["send_lag_s"] for t in tags])
    # sends are issued in schedule order, each at or after its time (never early)
    assert (lag >= 0).all()
    order = df.assign(s=[t["scheduled_s"] for t in tags]).sort_values("issue_ts")["s"]
    assert order.is_monotonic_increasing
    assert p["send_lag_p99_ms"] == pytest.approx(lag.quantile(0.99) * 1e3, rel=0.05, abs=0.05)
    print(f"send lag p50 {lag.median() * 1e3:.2f} ms, p99 {p['send_lag_p99_ms']:.2f} ms")


def test_a_slow_server_loses_no_request_and_the_schedule_holds(tmp_path) -> None:
    p, df = _run(tmp_path, "slow", "--slowdown", "40")
    assert len(df) == len(_schedule(10.0, 4.0)) and p["num_failed"] == 0
    # replies took far longer than the gaps between arrivals: requests piled up in flight
    assert p["median_e2el"] > 0.2 and p["client_inflight_mean"] > 2
    assert p["send_lag_p99_ms"] < 50  # sends never waited for replies


def test_session_traces_cannot_be_replayed_open_loop() -> None:
    traces = load_traces("scenarios/traces/weka-cc-traces/trace_0277.json")
    with pytest.raises(ConfigError, match="timestamped replay sends independent requests"):
        arrivals(traces, "scenarios/x.yaml")
