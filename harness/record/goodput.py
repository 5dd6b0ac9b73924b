"""Goodput: requests per second that met every named per-request SLO, and each SLO's met share
(docs/slo.md). Pure functions of `RequestRecord`s.

vLLM's `--goodput` (vllm/benchmarks/serve.py@def9ce85, calculate_metrics): a completed request
is good when, for every SLO given, `slo >= its value` (TTFT, TPOT, E2EL; inclusive), with a
request of one output token counted as TPOT 0; goodput = good requests / benchmark duration.
Failed requests are never good. Here the duration is the point's measured window, and each
share is over all measured requests (a failed request meets nothing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from harness.record.metrics import e2el, has_timing, output_tokens, tpot, ttft
from harness.records import RequestRecord

SLO_KINDS = ("ttft", "tpot", "e2el")


@dataclass(frozen=True, slots=True)
class Slo:
    """Per-request bounds in milliseconds; None: not an objective."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None

    def named(self) -> dict[str, float]:
        return {k: float(v) for k in SLO_KINDS if (v := getattr(self, f"{k}_ms")) is not None}

    def fields(self) -> dict[str, float]:
        """The objectives as the point records them (`slo_ttft_ms`...)."""
        return {f"slo_{k}_ms": v for k, v in self.named().items()}


def request_values_ms(r: RequestRecord) -> dict[str, float]:
    """One request's TTFT, TPOT and E2EL in ms as goodput judges them (TPOT 0 below two
    output tokens, as vLLM); NaN for a request that failed."""
    if not has_timing(r):
        return dict.fromkeys(SLO_KINDS, math.nan)
    t = tpot(r) if output_tokens(r) > 1 else 0.0
    return {"ttft": ttft(r) * 1e3, "tpot": t * 1e3, "e2el": e2el(r) * 1e3}


def request_meets(r: RequestRecord, slo: Slo) -> dict[str, bool]:
    """SLO kind -> met, for each named SLO (a failed request meets none)."""
    v = request_values_ms(r)
    return {k: bool(v[k] <= bound) for k, bound in slo.named().items()}  # NaN <= x is False


def goodput_metrics(records: Sequence[RequestRecord], duration_s: float,
                    slo: Slo) -> dict[str, float | int]:
    """`goodput` (req/s), `num_good`, `goodput_share` and `slo_<kind>_met_share` per named
    SLO; empty when no SLO is named."""
    named = slo.named()
    if not named:
        return {}
    n = len(records)
    met = {k: 0 for k in named}
    good = 0
    for r in records:
        verdict = request_meets(r, slo)
        for k, ok in verdict.items():
            met[k] += ok
        good += all(verdict.values())
    out: dict[str, float | int] = {
        "num_good": good,
        "goodput": good / duration_s if duration_s > 0 else math.nan,
        "goodput_share": good / n if n else math.nan,
    }
    for k in named:
        out[f"slo_{k}_met_share"] = met[k] / n if n else math.nan
    return out
