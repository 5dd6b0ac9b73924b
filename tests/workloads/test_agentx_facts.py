"""AgentX's aggregate figures under our names (harness/workloads/agentx_facts.py) and the
server's cache figures (harness/engines/server_cache.py), on hand-built records and scrapes
whose answers are worked out here from docs/upstream/agentx.md §2.2-2.3a."""

from __future__ import annotations

import statistics

import pytest

from harness.engines.counters import ENGINE_COUNTERS
from harness.engines.server_cache import server_cache_facts
from harness.record.catalogue import CATALOGUE
from harness.record.catalogue.agentx import AGENTX_NAMES
from harness.records import PHASE_MEASURED, PHASE_PROBE, PHASE_WARMUP, RequestRecord
from harness.workloads.agentx_facts import latency_extras as extras
from harness.workloads.agentx_facts import (
    qps_windows,
    request_accounting,
    stability_facts,
    token_facts,
)


def rec(send: float, ttft: float, e2el: float, osl: int, *, phase: str = PHASE_MEASURED,
        error: str = "", trace: str = "t0", out: int = 0) -> RequestRecord:
    return RequestRecord(
        request_id=f"{send}", phase=phase, expected_prompt_tokens=100, max_tokens=osl,
        issue_ts=send, send_ts=send, first_token_ts=send + ttft, last_token_ts=send + e2el,
        end_ts=send + e2el, chunk_ts=[send + ttft, send + e2el], prompt_tokens=100 + osl,
        completion_tokens=osl, http_status=500 if error else 200, error=error,
        tags={"trace": trace, "out": out or osl})


def test_qps_windows_are_left_closed_full_seconds_from_the_first_end() -> None:
    # ends 0, 0.5, 1.0, 1.5, 2.2, 2.9: windows [0,1) [1,2) (the third, [2,3), passes 2.9)
    assert qps_windows([0.0, 0.5, 1.0, 1.5, 2.2, 2.9]) == [2.0, 2.0]
    assert qps_windows([5.0, 5.4]) == []  # no full window: the caller reports n / span
    assert qps_windows([1.0]) == []


def test_request_accounting_counts_a_warm_error_in_both_and_once_in_total() -> None:
    rs = [rec(0, 0.1, 1, 10), rec(1, 0.1, 1, 10),
          rec(2, 0.1, 1, 1, phase=PHASE_PROBE),
          rec(3, 0.1, 1, 1, phase=PHASE_WARMUP, error="HTTPError: 500 boom"),
          rec(4, 0.1, 1, 10, error="ConnectionReset: gone")]
    a = request_accounting(rs)
    assert a == {"acct_records_total": 5, "acct_records_profiled": 2, "acct_dropped_total": 3,
                 "acct_warmup_dropped": 2, "acct_error_dropped": 2,
                 "acct_error_categories": {"ConnectionReset": 1, "HTTPError": 1}}


def test_interactivity_extras_are_agentx_formulas() -> None:
    # docs/upstream/agentx.md §2.3a: E2EL 1 s and 2 s at OSL 50 -> mean 33.333, std 12.5
    kept = [rec(0, 0.1, 1.0, 50), rec(1, 0.1, 2.0, 50)]
    got = extras(kept)
    assert got["mean_e2e_intvty"] == pytest.approx(1 / statistics.mean([1 / 50, 2 / 50]))
    assert got["mean_e2e_intvty"] == pytest.approx(33.333, abs=1e-3)
    assert got["std_e2e_intvty"] == pytest.approx(12.5)
    tpots = [(1.0 - 0.1) / 49, (2.0 - 0.1) / 49]
    assert got["std_request_intvty"] == pytest.approx(statistics.pstdev([1 / t for t in tpots]))


def test_token_distributions_and_expected_output() -> None:
    kept = [rec(0, 0.1, 1, 10, out=12), rec(1, 0.1, 1, 20, out=20), rec(2, 0.1, 1, 30, out=40)]
    t = token_facts(kept)
    assert t["mean_output_tokens"] == 20 and t["median_output_tokens"] == 20
    assert t["p90_output_tokens"] == pytest.approx(28.0)  # 20 + 0.8 x 10, linear
    assert t["std_output_tokens"] == pytest.approx(statistics.pstdev([10, 20, 30]))
    assert t["mean_input_tokens"] == 120 and t["p75_expected_output_tokens"] == 30


def test_stability_windows_and_trajectory_coverage() -> None:
    # 600 s windows from the first issue; 1500 s holds 2 whole windows; the request at 1300 s
    # falls in a third window and is left out of the ranges (not of the coverage)
    kept = [rec(0, 0.1, 1, 10, trace="a"), rec(100, 0.3, 3, 10, trace="a"),
            rec(700, 0.2, 2, 10, trace="b"), rec(1300, 9, 9, 10, trace="a")]
    s = stability_facts(kept, 1500.0)
    assert (s["stab_expected_windows"], s["stab_observed_windows"],
            s["stab_min_window_requests"]) == (2, 2, 1)
    ttft_p90 = s["stab_ranges"]["ttft"]["p90"]
    assert ttft_p90["min"] == pytest.approx(0.2)  # window 2: one request
    assert ttft_p90["max"] == pytest.approx(0.1 + 0.9 * 0.2)  # window 1: 0.1, 0.3
    assert s["traj_root_count"] == 2
    assert s["traj_kish_effective"] == pytest.approx(16 / (9 + 1))
    assert s["traj_largest_share"] == pytest.approx(0.75)
    assert stability_facts(kept, 45.0)["stab_ranges"] == {}  # a short point: no window


def test_every_agentx_key_is_catalogued_and_mapped_to_an_agentx_field() -> None:
    kept = [rec(0, 0.1, 1.0, 50), rec(0.5, 0.1, 2.0, 50), rec(2, 0.1, 2.0, 50)]
    keys = {*extras(kept), *token_facts(kept), *request_accounting(kept),
            *stability_facts(kept, 10.0)}
    assert not [k for k in keys if k not in CATALOGUE]
    assert not [k for k in AGENTX_NAMES if k not in CATALOGUE]
    # the collision made impossible to miss: AgentX's ITL is our TPOT, never our per-chunk ITL
    assert AGENTX_NAMES["p90_tpot"].startswith("request_metrics.latency.itl.p90")
    assert not [k for k in AGENTX_NAMES if k.endswith("_itl")]
    assert "AgentX" in CATALOGUE["p90_itl"].definition


def _sglang(prompt: float, device: float, host: float, usage: dict[str, float]
            ) -> dict[str, float]:
    s = {'sglang:prompt_tokens_total{model_name="m"}': prompt,
         'sglang:cached_tokens_total{cache_source="device",model_name="m"}': device,
         'sglang:cached_tokens_total{cache_source="host",model_name="m"}': host}
    for rank, u in usage.items():
        s[f'sglang:token_usage{{dp_rank="{rank}",model_name="m"}}'] = u
        s[f'sglang:max_total_num_tokens{{dp_rank="{rank}",model_name="m"}}'] = 1000.0
    return s


def test_sglang_hit_rates_by_source_and_kv_usage_over_ranks() -> None:
    before = _sglang(1000, 100, 0, {"0": 0.1, "1": 0.1})
    after = _sglang(3000, 1300, 200, {"0": 0.2, "1": 0.3})
    samples = [(1.0, _sglang(2000, 600, 100, {"0": 0.5, "1": 0.1})), (2.0, after)]
    f = server_cache_facts(ENGINE_COUNTERS["sglang"], before, after, samples)
    # backends/sglang.py: device / prompt, host / prompt, all sources / prompt
    assert f["server_hit_rate_device"] == pytest.approx(1200 / 2000)
    assert f["server_hit_rate_host"] == pytest.approx(200 / 2000)
    assert f["server_hit_rate_overall"] == pytest.approx(1400 / 2000)
    assert f["server_kv_usage_max"] == pytest.approx(0.5)  # max over ranks and samples
    assert f["server_kv_usage_mean"] == pytest.approx((0.5 + 0.1 + 0.2 + 0.3) / 4)
    assert f["server_kv_pool_tokens"] == 2000  # each dp rank's pool, summed


def test_vllm_sources_partition_the_prompt_and_percent_gauges_are_fractions() -> None:
    def v(local: float, ext: float, comp: float, usage: float) -> dict[str, float]:
        lab = 'engine="0",model_name="m"'
        return {f'vllm:prompt_tokens_by_source_total{{{lab},source="local_cache_hit"}}': local,
                f'vllm:prompt_tokens_by_source_total{{{lab},source="external_kv_transfer"}}':
                    ext,
                f'vllm:prompt_tokens_by_source_total{{{lab},source="local_compute"}}': comp,
                f"vllm:kv_cache_usage_perc{{{lab}}}": usage}

    f = server_cache_facts(ENGINE_COUNTERS["vllm"], v(0, 0, 0, 0), v(300, 100, 600, 42.0))
    assert f["server_hit_rate_device"] == pytest.approx(0.3)
    assert f["server_hit_rate_external"] == pytest.approx(0.1)
    assert f["server_hit_rate_overall"] == pytest.approx(0.4)
    assert f["server_prompt_tokens_computed"] == 600
    assert f["server_kv_usage_max"] == pytest.approx(0.42)  # 42 > 1.5: a percentage
    assert server_cache_facts(ENGINE_COUNTERS["vllm"], {}, {}) == {}


def test_server_metric_timeslices_are_one_second_from_the_window_start() -> None:
    from harness.publish.exports.aiperf_records import Clock
    from harness.publish.exports.aiperf_server_metrics import counter_slices, gauge_slices

    clock = Clock(10.0, 0)
    # window 10.0 .. 12.5 s: slices [10, 11) [11, 12) [12, 12.5) (the last cut short)
    g = gauge_slices([(10.2, 0.2), (10.7, 0.4), (11.5, 0.9), (12.5, 0.1)], 10.0, 12.5, clock)
    assert [(x["start_ns"], x["end_ns"]) for x in g] == [
        (0, 1_000_000_000), (1_000_000_000, 2_000_000_000), (2_000_000_000, 2_500_000_000)]
    assert g[0]["avg"] == pytest.approx(0.3) and g[0]["max"] == 0.4 and g[1]["min"] == 0.9
    assert g[2]["is_complete"] is False and "is_complete" not in g[0]
    c = counter_slices([(10.0, 100), (10.9, 130), (11.8, 150), (12.5, 151)], 10.0, 12.5, clock)
    assert [x["total"] for x in c] == [30, 20, 1]
    assert c[2]["rate"] == pytest.approx(2.0)  # 1 token over the last 0.5 s
