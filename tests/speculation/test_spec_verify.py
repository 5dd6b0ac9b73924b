"""Statistical verification of injected acceptance (harness.speculation.verify) and the pure counter
arithmetic behind it (harness.engines.counters), on hand-written scrapes."""

from __future__ import annotations

import math
import random

import pytest

from harness.engines.counters import (
    ENGINE_COUNTERS,
    prefix_hit_rate,
    realised_acceptance,
    resolve,
    split_key,
    token_deltas,
)
from harness.speculation.acceptance import check_injectable, synthetic_rates
from harness.speculation.truncation import expected_steps, truncated_al
from harness.speculation.verify import count_moments, verify, z_for

K = 3


def _simulate(al: float, n: int, seed: int) -> float:
    """Realised AL of n drafts drawn from the forced distribution (floor + Bernoulli)."""
    rng = random.Random(seed)
    frac = (al - 1) - math.floor(al - 1)
    acc = sum(math.floor(al - 1) + (rng.random() < frac) for _ in range(n))
    return 1 + acc / n


def test_moments_follow_from_unconditional_rates() -> None:
    assert count_moments([1.0, 0.5, 0.0]) == pytest.approx((1.5, 0.25))  # 1 + Bernoulli(.5)
    assert count_moments([1.0, 1.0, 0.0]) == pytest.approx((2.0, 0.0))  # exact
    # general rates: P(C>=1)=.8, P(C>=2)=.5, P(C>=3)=.2 -> P(C=0..3) = .2,.3,.3,.2
    mean, var = count_moments([0.8, 0.5, 0.2])
    assert mean == pytest.approx(1.5)
    assert var == pytest.approx(0.3 * 1 + 0.3 * 4 + 0.2 * 9 - 1.5**2)
    with pytest.raises(ValueError):
        count_moments([0.5, 0.8])  # not a distribution of leading accepted positions
    assert z_for(0.999) == pytest.approx(3.2905, abs=1e-4)


@pytest.mark.parametrize("al", [1.5, 2.5, 3.5])
def test_honest_points_pass(al: float) -> None:
    for seed in range(20):
        realised = _simulate(al, 2000, seed)
        v = verify(al, realised, 2000, k=K)
        assert v.ok, v.reason
        assert v.interval[0] < al < v.interval[1]


def test_five_percent_off_with_ten_thousand_drafts_fails() -> None:
    v = verify(2.5, 2.5 * 0.95, 10_000, k=K)
    assert not v.ok
    assert "below the requested 2.5" in v.reason and "10000 draws" in v.reason
    assert v.se == pytest.approx(0.5 / 100)  # sd 0.5 per draft, sqrt(10000)
    # the same 5% on an exact AL (no variance) fails too
    assert not verify(3.0, 2.85, 10_000, k=K).ok


def test_87_drafts_at_2437_is_what_the_statistics_say() -> None:
    # SE = 0.5 / sqrt(87) = 0.054: -0.063 is 1.2 SE, well inside 3.29 SE - not evidence of a
    # broken injection (the old fixed 2% called it invalid) ...
    v = verify(2.5, 2.437, 87, k=K, min_drafts=50)
    assert v.ok
    assert v.se == pytest.approx(0.5 / math.sqrt(87))
    assert v.error == pytest.approx(2.437 / 2.5 - 1)
    # ... but 87 drafts are too few to call it verified either: its own reason.
    v = verify(2.5, 2.437, 87, k=K)
    assert not v.ok
    assert v.reason.startswith("the drafter proposed 87 drafts (< min_drafts 200)")
    # A long point 1.5% off passed the old 2% tolerance, yet with 100k drafts it is 24 SE away:
    assert not verify(2.5, 2.5 * 0.985, 100_000, k=K).ok


def test_no_drafts_is_its_own_reason() -> None:
    v = verify(2.5, None, 0, k=K)
    assert not v.ok and "no drafts" in v.reason


def test_rates_must_match_the_requested_al() -> None:
    with pytest.raises(ValueError):
        verify(2.5, 2.5, 1000, rates=synthetic_rates(3.0, K))
    assert verify(2.5, 2.5, 1000, rates=synthetic_rates(2.5, K)).ok


def test_ngram_refused_for_injected_agentic_points() -> None:
    reason = check_injectable("ngram", "agentic")
    assert reason is not None and "ngram" in reason and "mtp" in reason
    assert check_injectable("ngram", "fixed") is None
    assert check_injectable("ngram", "agentic", mode="real") is None
    assert check_injectable("mtp", "agentic") is None


# ---- counters -------------------------------------------------------------------------------

def test_label_keys_parse_with_escapes() -> None:
    assert split_key('m{b="2",a="x \\"y\\""}') == ("m", (("a", 'x "y"'), ("b", "2")))
    assert split_key("plain") == ("plain", ())


def test_llamacpp_hit_rate_counts_only_evaluated_prompt_tokens() -> None:
    c = ENGINE_COUNTERS["llamacpp"]
    before = {"llamacpp:prompt_tokens_total": 100.0, "llamacpp:prompt_tokens_cached_total": 0.0,
              "llamacpp:tokens_predicted_total": 10.0}
    after = {"llamacpp:prompt_tokens_total": 130.0, "llamacpp:prompt_tokens_cached_total": 90.0,
             "llamacpp:tokens_predicted_total": 50.0}
    assert prefix_hit_rate(c, before, after) == pytest.approx(90 / 120)
    d = token_deltas(c, before, after)
    assert (d.prompt, d.generation, d.cached) == (120.0, 40.0, 90.0)


def test_vllm_counters_sum_over_engines_and_report_each_rank() -> None:
    c = ENGINE_COUNTERS["vllm"]

    def scrape(drafts: list[int], accepted: list[int]) -> dict[str, float]:
        out = {}
        for i, (d, a) in enumerate(zip(drafts, accepted, strict=True)):
            lab = f'{{engine="{i}",model_name="m"}}'
            out[f"vllm:spec_decode_num_drafts_total{lab}"] = d
            out[f"vllm:spec_decode_num_accepted_tokens_total{lab}"] = a
            out[f"vllm:spec_decode_num_drafts_created{lab}"] = 1.7e9  # never a counter
        return out

    r = realised_acceptance(c, scrape([10, 10], [5, 5]), scrape([110, 210], [155, 305]))
    assert r.source == "counters" and r.drafts == 300
    assert r.al == pytest.approx(1 + 450 / 300)
    assert r.per_rank == pytest.approx({"engine=0": 2.5, "engine=1": 2.5})


def test_trtllm_falls_back_to_iteration_counters_with_k() -> None:
    c = ENGINE_COUNTERS["trtllm"]
    lab = '{engine_type="undefined",model_name="undefined"}'
    before = {f"trtllm_spec_decode_num_draft_tokens_total{lab}": 0.0,
              f"trtllm_spec_decode_num_accepted_tokens_total{lab}": 0.0}
    after = {f"trtllm_spec_decode_num_draft_tokens_total{lab}": 3000.0,
             f"trtllm_spec_decode_num_accepted_tokens_total{lab}": 1500.0}
    assert realised_acceptance(c, before, after).al is None  # drafts unknown without k
    r = realised_acceptance(c, before, after, k=3)
    assert r.al == pytest.approx(2.5) and r.drafts == 1000 and r.drafts_estimated


def test_sglang_gauge_is_averaged_per_rank_never_summed() -> None:
    c = ENGINE_COUNTERS["sglang"]

    def scrape(values: list[float]) -> dict[str, float]:
        return {f'sglang:spec_accept_length{{dp_rank="{i}",engine_type="unified",'
                f'model_name="m",pp_rank="0",tp_rank="{i}"}}': v for i, v in enumerate(values)}

    before = scrape([2.2, 2.6])  # intervals logged before the window (the warmup's)
    samples = [(0.0, scrape([2.4, 2.6])), (1.0, scrape([2.4, 2.6])),  # same interval twice;
               (2.0, scrape([2.6, 2.4])), (3.0, scrape([0.0, 2.5]))]  # rank 0 idle: left out
    after = scrape([2.6, 2.6])  # rank 1 logged one more interval after the last sample
    r = realised_acceptance(c, before, after, samples)
    assert r.source == "gauge-sampled" and r.truncated_at_finish
    assert r.al == pytest.approx(2.5)
    assert r.per_rank == pytest.approx({"dp_rank=0,pp_rank=0,tp_rank=0": 2.5,
                                        "dp_rank=1,pp_rank=0,tp_rank=1": 2.5})
    assert r.drafts == 5 * 40  # five new readings of 40-step intervals (2.2, 2.6 were before)


def test_sglang_gauge_weights_ranks_by_the_intervals_they_logged() -> None:
    """A rank that logged four intervals did four times the steps of one that logged one:
    the readings are pooled, not the ranks' means averaged (2.5 here, not 2.8)."""
    c = ENGINE_COUNTERS["sglang"]

    def scrape(r0: float, r1: float) -> dict[str, float]:
        return {f'sglang:spec_accept_length{{dp_rank="{i}",engine_type="unified",'
                f'model_name="m",pp_rank="0",tp_rank="{i}"}}': v for i, v in enumerate((r0, r1))}

    samples = [(float(t), scrape(2.0, v)) for t, v in enumerate((2.9, 3.1, 2.9, 3.1))]
    r = realised_acceptance(c, {}, samples[-1][1], samples)
    assert r.al == pytest.approx((2.0 + 4 * 3.0) / 5) and r.drafts == 5 * 40
    assert sorted(r.per_rank.values()) == pytest.approx([2.0, 3.0])


def test_a_metric_that_cuts_the_last_step_reads_short_replies_low() -> None:
    """SGLang counts only the tokens a request's finishing step kept: at AL 2.5 (k 3: 2 or 3
    tokens a step) a 4-token reply always takes two steps and reads 2.0; a 1-token reply
    reads 1.0; long replies read the injected AL; verification centres on what it reads."""
    rates = synthetic_rates(2.5, 3)
    assert truncated_al(rates, [4]) == pytest.approx(2.0)
    assert truncated_al(rates, [1, 1]) == pytest.approx(1.0)
    assert truncated_al(rates, [0]) is None
    assert truncated_al(rates, [4000]) == pytest.approx(2.5, rel=2e-3)
    assert expected_steps(5, rates) == pytest.approx([0, 1, 1, 1.5, 2, 2.25])
    short = truncated_al(rates, [4, 4, 15, 44])
    assert short is not None and 2.2 < short < 2.45
    assert not verify(2.5, short, 5000, k=3).ok  # judged against the requested AL: fails
    v = verify(2.5, short, 5000, k=3, expected=short)
    assert v.ok and v.expected == short and v.error == pytest.approx(0.0)
    off = verify(2.5, short - 0.1, 5000, k=3, expected=short)
    assert not off.ok and "the last step of each request cut" in off.reason


def test_endpoint_resolves_to_the_engine_whose_names_it_serves() -> None:
    ep = ENGINE_COUNTERS["endpoint"]
    assert resolve(ep, {'atom:mtp_decode_steps_total{accepted_tokens="1"}': 3.0}).kind == "atom"
    assert resolve(ep, {"llamacpp:tokens_predicted_total": 3.0}).kind == "llamacpp"
    assert resolve(ep, {"something_else": 1.0}) is None
    assert realised_acceptance(ep, {}, {"x": 1.0}).al is None


def test_make_runs_agentic_speculator_injects_through_a_drafter_that_always_proposes() -> None:
    """`make run`'s agentic speculative points: the model drafting for itself with an explicit
    AL (injected, verified); the same points with the n-gram drafter are refused up front."""
    import pytest

    from harness.config.compose import compose_sweep
    from harness.config.errors import ConfigError
    from harness.speculation.acceptance import resolve

    agentic = ["scenarios=agentic-weka-cpu-decode", "concurrency=[1,2]"]
    sc = compose_sweep([*agentic, "speculator=self_draft"])
    assert (sc.speculator.method, sc.speculator.draft_model) == ("draft_model", "self")
    p = resolve(sc, can_inject=True, where="recipes/speculator/self_draft.yaml")
    assert (p.mode, p.length, p.source) == ("injected", 1.8, "explicit")
    with pytest.raises(ConfigError, match="n-grams already in the text"):
        resolve(compose_sweep([*agentic, "speculator=ngram"]), True, "ngram.yaml")
    fixed = compose_sweep(["speculator=ngram"])  # the fixed-sequence series: real acceptance
    assert resolve(fixed, True, "x").mode == "real"
