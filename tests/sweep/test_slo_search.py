"""search=slo's strategy (harness/sweep/search.py) on synthetic points whose p99 TTFT grows
with load: it finds the boundary an exhaustive sweep finds, in fewer points; confirmation
repeats move a boundary that fails on a second look; invalid points fail."""

from __future__ import annotations

import pytest

from harness.sweep.search import SloSearch, criteria, judge


def point(load: float, ttft_s: float, tpot_s: float = 0.01, valid: bool = True) -> dict:
    return {"valid": valid, "p99_ttft": ttft_s, "p90_tpot": tpot_s, "median_intvty": 1 / tpot_s,
            "invalid_reasons": [] if valid else ["client fell behind"], "load": load}


def run(search: SloSearch, measure) -> SloSearch:
    crit = criteria({"p99_ttft_ms": 500, "p90_tpot_ms": 40})
    while (load := search.next_load()) is not None:
        n = len(search.seen.get(load, []))
        search.record(load, f"c{load:g}-r{n}", judge(measure(load, n), crit))
        assert len(search.order) < 100
    return search


def linear(load: float, _n: int) -> dict:
    return point(load, 0.06 * load, 0.004 * load)  # TTFT breaks above 8.33, TPOT above 10


@pytest.mark.parametrize("hi", [16, 64, 100])
def test_it_finds_the_exhaustive_boundary_in_fewer_points(hi: int) -> None:
    s = run(SloSearch(1, hi, 1, confirm=1, integer=True), linear)
    crit = criteria({"p99_ttft_ms": 500, "p90_tpot_ms": 40})
    grid = [c for c in range(1, hi + 1) if judge(linear(c, 0), crit).ok]
    r = s.result(crit)
    assert r["highest_passing"] == max(grid) == 8 and r["lowest_failing"] == 9
    assert r["breaching_metric"] == "p99_ttft_ms"
    assert r["breaching_value"] == pytest.approx(540) and r["breaching_bound"] == 500
    assert r["passing_evidence"]["measured"] == 2 and r["failing_evidence"]["passed"] == 0
    assert r["num_points"] < hi and r["resolved"]
    print(f"hi={hi}: {r['num_points']} points against {hi}")


def test_a_boundary_that_fails_its_confirmation_moves_down() -> None:
    def flaky(load: float, n: int) -> dict:  # load 8 passes once, then fails
        if load == 8:
            return point(load, 0.45 if n == 0 else 0.55)
        return point(load, 0.06 * load)
    r = run(SloSearch(1, 32, 1, confirm=1, integer=True), flaky).result(
        criteria({"p99_ttft_ms": 500}))
    assert (r["highest_passing"], r["lowest_failing"]) == (7, 8)
    assert r["failing_evidence"] == {"load": 8, "measured": 2, "passed": 1,
                                     "worst_margin": {"p99_ttft_ms": pytest.approx(1.1)}}


def test_rates_bisect_to_the_resolution_and_invalid_points_fail() -> None:
    def open_loop(rate: float, _n: int) -> dict:
        return point(rate, 0.1, valid=rate < 3.3)  # the client falls behind above 3.3 req/s
    s = run(SloSearch(0.5, 8, 0.25, confirm=0, integer=False), open_loop)
    r = s.result(criteria({"p99_ttft_ms": 500}))
    assert r["highest_passing"] == pytest.approx(3.25) and r["lowest_failing"] == 3.5
    assert r["breaching_metric"].startswith("invalid: client fell behind")


def test_out_of_range_both_ways() -> None:
    low = run(SloSearch(4, 16, 1, confirm=0, integer=True), linear).result(criteria({}))
    assert low["highest_passing"] is None or low["highest_passing"] >= 4
    assert run(SloSearch(10, 16, 1, 0, True), linear).result(
        criteria({"p99_ttft_ms": 500}))["highest_passing"] is None
    all_pass = run(SloSearch(1, 4, 1, 0, True), linear).result(criteria({"p99_ttft_ms": 500}))
    assert all_pass["highest_passing"] == 4 and all_pass["lowest_failing"] is None


@pytest.mark.slow
def test_the_search_runs_ordinary_points_and_writes_its_result(tmp_path) -> None:
    import json

    from harness.record.results import read_points
    from harness.testing.self_gate import tokenizer_file
    from harness.testing.spawn import spawn_server
    from tests.helpers import harness

    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms", "1",
                      "--tokenizer", str(tokenizer_file())) as port:
        r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}",
                    "search.mode=slo", "+search.criteria.p99_ttft_ms=5000", "search.lo=1",
                    "search.hi=4", "search.confirm=1", "scenario.isl=32", "scenario.osl=8",
                    "scenario.warmup_per_conc=1", "scenario.requests_per_conc=3",
                    # the client's own validity is not under test here (a busy CI host)
                    "client.max_stamp_err_ms=1000", "client.max_queue_delay_ms=1000",
                    "client.max_stall_share=1", "client.max_cpu_share=1",
                    f"results_dir={tmp_path}", "run_id=s")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [found] = (tmp_path / "s" / "search").glob("*.json")
    res = json.loads(found.read_text())
    assert [p["load"] for p in res["points"]] == [1, 2, 4, 4], res  # doubling, then confirming 4
    assert res["highest_passing"] == 4 and res["lowest_failing"] is None
    points = read_points(tmp_path / "s")
    assert sorted(p["point_id"] for p in points) == sorted(p["point_id"]
                                                           for p in res["points"])
    assert sorted((p["conc"], p["repeat"]) for p in points) == [(1, 0), (2, 0), (4, 0), (4, 1)]
