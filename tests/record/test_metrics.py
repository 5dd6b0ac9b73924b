"""Metric formulas on hand-built records (methodology.md §3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.record.metrics import GpuCount, point_metrics, throughput
from harness.record.workload_traits import built_in_traits
from harness.records import RequestRecord

FIXED = built_in_traits("fixed")
AGENTIC = built_in_traits("agentic")


def _rec(send: float, chunks: list[float], completion: int, prompt: int = 100,
         error: str = "") -> RequestRecord:
    r = RequestRecord("r", "measured", prompt, completion)
    r.send_ts, r.http_status, r.error = send, 200, error
    r.chunk_ts = chunks
    r.chunk_tokens = [1] * len(chunks)
    if chunks:
        r.first_token_ts, r.last_token_ts = chunks[0], chunks[-1]
    r.prompt_tokens, r.completion_tokens = prompt, completion
    return r


def test_tpot_is_token_normalised_from_usage_not_chunks() -> None:
    # 3 chunks carrying 9 tokens (speculative decoding): TPOT = (E2EL - TTFT) / (9 - 1).
    r = _rec(0.0, [0.1, 0.5, 0.9], completion=9)
    m = point_metrics([r], duration_s=1.0, gpus=GpuCount(1))
    assert m["median_ttft"] == pytest.approx(0.1)
    assert m["median_e2el"] == pytest.approx(0.9)
    assert m["median_tpot"] == pytest.approx(0.8 / 8)
    assert m["median_itl"] == pytest.approx(0.4)  # per chunk, kept separately
    assert m["median_intvty"] == pytest.approx(10.0)


def test_interactivity_is_one_over_the_tpot_statistic_not_a_percentile_of_rates() -> None:
    rng = np.random.default_rng(0)
    recs = []
    for i in range(200):
        tpot = float(rng.uniform(0.01, 0.1))
        recs.append(_rec(float(i), [i + 0.2 + k * tpot for k in range(11)], completion=11))
    m = point_metrics(recs, duration_s=200.0, gpus=GpuCount(1))
    tpots = np.array([(r.last_token_ts - r.first_token_ts) / 10 for r in recs])
    assert m["p99_intvty"] == pytest.approx(1 / np.percentile(tpots, 99))
    assert m["p99_intvty"] != pytest.approx(np.percentile(1 / tpots, 99), rel=0.01)
    assert m["p90_tpot"] == pytest.approx(np.percentile(tpots, 90))
    assert m["std_tpot"] == pytest.approx(tpots.std())


def test_failed_requests_are_counted_not_measured() -> None:
    ok = _rec(0.0, [0.1, 0.2], completion=2)
    bad = _rec(0.0, [0.5], completion=1, error="HTTP 500")
    m = point_metrics([ok, bad], duration_s=1.0, gpus=GpuCount(2))
    assert (m["num_requests"], m["num_completed"], m["num_failed"]) == (2, 1, 1)
    assert m["total_output_tokens"] == 2
    assert m["output_tput_per_gpu"] == pytest.approx(1.0)
    assert m["tput_per_gpu"] == pytest.approx(51.0)


def test_disaggregated_throughput_per_pool() -> None:
    t = throughput(in_tok=8000, out_tok=1000, n_done=10, duration_s=10.0,
                   gpus=GpuCount(total=12, prefill=4, decode=8))
    assert t["tput_per_gpu"] == pytest.approx(900 / 12)
    assert t["input_tput_per_gpu"] == pytest.approx(800 / 4)
    assert t["output_tput_per_gpu"] == pytest.approx(100 / 8)


def test_e2e_normalised_interactivity() -> None:
    recs = [_rec(0.0, [0.1 * (k + 1) for k in range(n)], completion=n) for n in (5, 10, 20)]
    m = point_metrics(recs, duration_s=3.0, gpus=GpuCount(1))
    ratios = [0.5 / 5, 1.0 / 10, 2.0 / 20]
    assert m["p90_e2e_intvty"] == pytest.approx(1 / np.percentile(ratios, 90))


def test_single_token_requests_have_no_tpot() -> None:
    m = point_metrics([_rec(0.0, [0.1], completion=1)], duration_s=1.0, gpus=GpuCount(1))
    assert math.isnan(m["median_tpot"]) and math.isnan(m["median_intvty"])


def test_coalesced_reply_tpot_zero_is_left_out_as_agentx_drops_it() -> None:
    """A reply read in one go (all chunks stamped alike) has TPOT 0; the AIPerf export writes
    no ITL for it and AgentX drops ITL <= 0, so our p90_intvty must leave it out too."""
    from harness.publish.exports.aiperf_records import record_metrics

    recs = [_rec(0.0, [0.1 + 0.01 * i for i in range(5)], completion=5 + i) for i in range(4)]
    recs += [_rec(0.0, [0.2, 0.2, 0.2], completion=3) for _ in range(3)]  # coalesced
    m = point_metrics(recs, duration_s=1.0, gpus=GpuCount(1), drop_zero_tpot=True)
    itl = [x["inter_token_latency"]["value"] / 1000 for x in map(record_metrics, recs)
           if "inter_token_latency" in x]
    assert len(itl) == 4
    assert 1 / float(np.percentile(itl, 90)) == pytest.approx(m["p90_intvty"], rel=1e-9)
    # fixed-sequence points keep TPOT 0, as vLLM's benchmark_serving does
    kept = point_metrics(recs, duration_s=1.0, gpus=GpuCount(1))
    assert kept["p90_intvty"] != pytest.approx(m["p90_intvty"])


def test_a_percentile_is_held_only_by_a_sample_with_a_value_beyond_it() -> None:
    from harness.record.metrics import needed_for, unheld_stats

    assert [needed_for(q) for q in (50, 75, 90, 95, 99, 99.9)] == [2, 4, 10, 20, 100, 1000]
    assert unheld_stats(10) == {"p95": 20, "p99": 100, "p99.9": 1000}
    assert unheld_stats(1000) == {}
    # The reason: below 1 / (1 - q) values, "p99.9" is the sample's maximum, give or take.
    x = np.arange(10.0)
    assert np.percentile(x, 99.9) > np.percentile(x, 99) > 8.9


def test_a_point_says_which_of_its_percentiles_its_sample_does_not_hold() -> None:
    recs = [_rec(float(i), [i + 0.1, i + 0.2, i + 0.3], completion=3) for i in range(10)]
    m = point_metrics(recs, duration_s=10.0, gpus=GpuCount(1))
    assert m["stats_sample"] == {"ttft": 10, "tpot": 10, "itl": 20, "e2el": 10}
    assert m["stats_unheld"]["ttft"] == {"p95": 20, "p99": 100, "p99.9": 1000}
    assert m["stats_unheld"]["itl"] == {"p99": 100, "p99.9": 1000}  # 20 gaps hold p95
    assert not math.isnan(m["p99_ttft"])  # still computed: InferenceX's rows carry it


def test_the_sample_rule_per_point_kind() -> None:
    from harness.record.bench_rules import sample_facts, sample_rules
    from harness.record.validity import ValiditySettings, judge

    recs = [_rec(float(i), [i + 0.1, i + 0.2], completion=2) for i in range(12)]
    m = point_metrics(recs, duration_s=12.0, gpus=GpuCount(1))
    assert judge(sample_rules(m, FIXED, ValiditySettings(sample="invalid"))).valid
    strict = judge(sample_rules(m, AGENTIC, ValiditySettings(sample="invalid")))
    assert not strict.valid and ">= 20" in strict.reasons[0]
    assert "ttft p95 needs >= 20 values, has 12" in strict.reasons[0]
    warned = sample_rules(m, AGENTIC, ValiditySettings())  # the default: warn
    assert judge(warned).valid and "kept" in sample_facts(warned)["sample_warning"]
    assert sample_rules(m, AGENTIC, ValiditySettings(sample="off")) == []
