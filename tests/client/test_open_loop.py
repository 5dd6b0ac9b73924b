"""Open-loop arrivals for fixed-sequence points (harness/client/open_loop.py): vLLM's
schedule (gamma gaps of shape `burstiness`, scaled so the last send is at n / rate), seeded and
recorded; sends at their times, each with its lag; a cap on requests in flight whose wait is
not counted as lag; and the sweep's points keyed by rate."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from harness.client.open_loop import arrival_offsets
from harness.record.results import read_points
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server
from tests.helpers import harness


def test_schedules_follow_vllms_definition() -> None:
    rng = lambda: np.random.default_rng(7)  # noqa: E731
    n, rate = 4000, 5.0
    for kind, burst, cv in (("poisson", 1.0, 1.0), ("gamma", 0.25, 2.0), ("gamma", 4.0, 0.5)):
        at = arrival_offsets(kind, rate, n, burst, rng())
        assert at[-1] == pytest.approx(n / rate)  # vLLM rescales to n / rate exactly
        gaps = np.diff(at)
        assert (gaps >= 0).all() and np.mean(gaps) == pytest.approx(1 / rate, rel=0.05)
        # gamma of shape k: coefficient of variation 1 / sqrt(k)
        assert np.std(gaps) / np.mean(gaps) == pytest.approx(cv, rel=0.1), kind
    const = arrival_offsets("constant", rate, 10, 1.0, rng())
    assert const == pytest.approx(np.arange(1, 11) / rate)
    assert (arrival_offsets("gamma", 2, 50, 0.5, rng())
            == arrival_offsets("gamma", 2, 50, 0.5, rng())).all()  # seeded
    with pytest.raises(ValueError):
        arrival_offsets("poisson", 0.0, 5, 1.0, rng())


def _sweep(tmp_path, run_id: str, *extra: str) -> list[tuple[dict, pd.DataFrame]]:
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms", "1",
                      "--tokenizer", str(tokenizer_file())) as port:
        r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}",
                    "scenario.isl=32", "scenario.osl=8", "scenario.warmup_per_conc=1",
                    "scenario.requests_per_conc=6", "client.max_stamp_err_ms=20",
                    "client.max_queue_delay_ms=100", "slo.ttft_ms=1000", "slo.tpot_ms=100",
                    f"results_dir={tmp_path}", f"run_id={run_id}", *extra)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = []
    for p in read_points(tmp_path / run_id):
        df = pd.read_parquet(tmp_path / run_id / "requests" / f"{p['point_id']}.parquet")
        out.append((p, df[df["phase"] == "measured"]))
    return out


@pytest.mark.slow
def test_poisson_points_at_two_rates_keep_their_schedule(tmp_path) -> None:
    points = _sweep(tmp_path, "pois", "scenario.arrival=poisson",
                    "scenario.request_rate=[4,8]")
    assert sorted(p["rate"] for p, _ in points) == [4.0, 8.0]
    for p, df in points:
        assert p["point_id"].startswith(f"q{p['rate']:g}-") and p["arrival"] == "poisson"
        assert p["conc"] == 0 and len(df) == 6 * int(p["rate"])
        tags = [json.loads(t) for t in df["tags"]]
        lag = np.array([t["send_lag_s"] for t in tags])
        assert (lag >= 0).all()
        assert p["send_lag_p99_ms"] == pytest.approx(np.percentile(lag, 99) * 1e3, rel=1e-6)
        sched = sorted(t["scheduled_s"] for t in tags)
        assert sched[-1] == pytest.approx(len(df) / p["rate"])
        assert p["goodput"] is not None and 0 < p["goodput_share"] <= 1
        assert p["slo_ttft_ms"] == 1000
        rule = next(r for r in p["validity"] if r["name"] == "schedule_kept")
        assert rule["ok"] == (p["send_lag_p99_ms"] <= 5.0)


@pytest.mark.slow
def test_a_cap_waits_without_counting_as_lag(tmp_path) -> None:
    [(p, df)] = _sweep(tmp_path, "cap", "scenario.arrival=constant",
                       "scenario.request_rate=[200]", "scenario.max_inflight=1",
                       "scenario.num_requests=20")
    tags = [json.loads(t) for t in df["tags"]]
    # due every 5 ms but one at a time at >= 13 ms each (5 ms TTFT + 8 tokens 1 ms apart):
    # most requests wait for the slot, and that wait is not lag
    assert p["conc"] == 1 and sum(t["cap_wait_s"] > 0 for t in tags) > 10
    assert p["cap_wait_p99_ms"] > 20 and p["send_lag_p99_ms"] < p["cap_wait_p99_ms"]
