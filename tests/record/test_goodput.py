"""Goodput and each SLO's met share against a hand count over request records (vLLM's
--goodput rule: inclusive bounds, TPOT 0 for one output token, failed requests never good)."""

from __future__ import annotations

import math

from harness.record.goodput import Slo, goodput_metrics, request_meets
from harness.records import RequestRecord


def rec(ttft_ms: float, e2el_ms: float, out: int, ok: bool = True) -> RequestRecord:
    r = RequestRecord("r", "measured", 10, out, issue_ts=100.0, send_ts=100.0,
                      first_token_ts=100.0 + ttft_ms / 1e3, last_token_ts=100.0 + e2el_ms / 1e3,
                      end_ts=100.0 + e2el_ms / 1e3, completion_tokens=out, http_status=200,
                      chunk_ts=[100.0 + ttft_ms / 1e3])
    if not ok:
        r.error = "boom"
    return r


# (ttft ms, e2el ms, output tokens): TPOT = (e2el - ttft) / (out - 1)
ROWS = [(100, 1100, 11),   # tpot 100: good on ttft<=200 and tpot<=100 (inclusive bounds)
        (250, 750, 11),    # ttft misses, tpot 50
        (150, 2150, 11),   # tpot 200 misses
        (300, 300, 1),     # one token: TPOT counts as 0; ttft misses
        (50, 50, 1),       # one token, fast: good
        (10, 20, 2)]       # tpot 10: good


def test_goodput_equals_a_hand_count() -> None:
    records = [rec(*r) for r in ROWS] + [rec(10, 20, 5, ok=False)]  # a failed one is never good
    slo = Slo(ttft_ms=200, tpot_ms=100)
    hand_good = hand_ttft = hand_tpot = 0
    for ttft, e2el, out in ROWS:
        tpot = (e2el - ttft) / (out - 1) if out > 1 else 0.0
        hand_ttft += ttft <= 200
        hand_tpot += tpot <= 100
        hand_good += ttft <= 200 and tpot <= 100
    assert hand_good == 3
    m = goodput_metrics(records, duration_s=2.0, slo=slo)
    assert m["num_good"] == hand_good
    assert m["goodput"] == hand_good / 2.0
    assert m["goodput_share"] == hand_good / len(records)
    assert m["slo_ttft_met_share"] == hand_ttft / len(records)
    assert m["slo_tpot_met_share"] == hand_tpot / len(records)
    assert "slo_e2el_met_share" not in m


def test_e2el_slo_and_no_slo() -> None:
    records = [rec(*r) for r in ROWS]
    m = goodput_metrics(records, 1.0, Slo(e2el_ms=750))
    assert m["num_good"] == sum(1 for _, e2el, _ in ROWS if e2el <= 750) == 4
    assert goodput_metrics(records, 1.0, Slo()) == {}
    assert request_meets(rec(10, 20, 5, ok=False), Slo(ttft_ms=1e9)) == {"ttft": False}
    assert math.isnan(goodput_metrics([], 1.0, Slo(ttft_ms=1))["goodput_share"])
