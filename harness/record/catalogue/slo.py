"""Goodput and SLO figures (harness/record/goodput.py), and the open-loop schedule's figures
(docs/slo.md)."""

from __future__ import annotations

from harness.record.catalogue.base import HIGHER, NEUTRAL, Metric
from harness.record.catalogue.base import m as _m

METRICS: list[Metric] = [
    _m("goodput", "Goodput", "req/s", HIGHER,
       "measured requests meeting every named SLO (slo.ttft_ms, slo.tpot_ms, slo.e2el_ms) / "
       "measured duration (vLLM --goodput)", "slo"),
    _m("goodput_share", "Goodput share", "ratio", HIGHER,
       "measured requests meeting every named SLO / measured requests", "slo"),
    _m("num_good", "num good", "count", NEUTRAL,
       "measured requests meeting every named SLO", "counts"),
    _m("slo_ttft_met_share", "TTFT SLO met share", "ratio", HIGHER,
       "measured requests with TTFT <= slo.ttft_ms / measured requests", "slo"),
    _m("slo_tpot_met_share", "TPOT SLO met share", "ratio", HIGHER,
       "measured requests with TPOT <= slo.tpot_ms (0 for one output token) / measured "
       "requests", "slo"),
    _m("slo_e2el_met_share", "E2EL SLO met share", "ratio", HIGHER,
       "measured requests with E2EL <= slo.e2el_ms / measured requests", "slo"),
    _m("request_rate", "Request rate, offered", "req/s", NEUTRAL,
       "open loop: the rate the arrival schedule was drawn at (scenario.request_rate)", "slo"),
    _m("cap_wait_p99_ms", "In-flight cap wait p99 (open loop)", "ms", NEUTRAL,
       "open loop: how long a due request waited for a slot under scenario.max_inflight, p99",
       "client"),
]
