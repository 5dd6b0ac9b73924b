"""Open-loop, SLO and search settings refused before anything starts, naming the key and the
fix (harness/config/validate_slo.py); the open-loop identity keys points by rate."""

from __future__ import annotations

import pytest

from harness.config.validate import to_sweep_config
from harness.record.identity import point_identity
from tests.config.test_config_errors import _compose, _error


@pytest.mark.parametrize(("overrides", "key", "words"), [
    (["scenario.arrival=bursty"], "scenario.arrival", "unknown arrival"),
    (["scenario.arrival=poisson"], "scenario.request_rate", "needs a list of positive rates"),
    (["scenario.arrival=gamma", "scenario.request_rate=[1]", "scenario.burstiness=0"],
     "scenario.burstiness", "must be positive"),
    (["scenario.arrival=poisson", "scenario.request_rate=[1,1]"], "scenario.request_rate",
     "more than once"),
    (["scenario.arrival=poisson", "scenario.request_rate=[1]", "client.workers=2"],
     "client.workers", "one client process"),
    (["slo.ttft_ms=-5"], "slo.ttft_ms", "must be positive"),
    (["search.mode=slo"], "search.criteria", "at least one criterion"),
    (["search.mode=slo", "+search.criteria.p99_ttfb_ms=5"], "search.criteria.p99_ttfb_ms",
     "not a statistic"),
    (["search.mode=slo", "+search.criteria.goodput_share=0.9"],
     "search.criteria.goodput_share", "needs a per-request SLO"),
    (["search.mode=slo", "+search.criteria.p99_ttft_ms=5", "search.lo=8", "search.hi=4"],
     "search.lo", "0 < lo < hi"),
    (["search.mode=bisect"], "search.mode", "unknown mode"),
])
def test_bad_settings_are_refused(overrides, key, words) -> None:
    e = _error([o if o.startswith("+") else "++" + o for o in overrides])  # as the CLI does
    assert e.key == key and words in str(e)


def test_rate_points_have_their_own_ids() -> None:
    cfg, where = _compose(["++scenario.arrival=poisson", "++scenario.request_rate=[1,2]"])
    sc = to_sweep_config(cfg, where)
    a, b = point_identity(sc, 0, 0, rate=1.0), point_identity(sc, 0, 0, rate=2.0)
    assert a.point_id().startswith("q1-r0-") and a.point_id() != b.point_id()
    assert a.match_key() != b.match_key() and a.arrival == "poisson"
    # closed-loop ids are unchanged by the new fields at their defaults
    cfg2, where2 = _compose([])
    closed = point_identity(to_sweep_config(cfg2, where2), 4, 0)
    assert closed.rate is None and "rate" not in closed.point_id()


def test_an_open_loop_slo_search_needs_no_rate_list() -> None:
    """The search picks its rates (search.lo..hi), so the list is optional there, and a bad
    one is still refused."""
    base = ["++scenario.arrival=poisson", "++search.mode=slo", "+search.criteria.p99_ttft_ms=50"]
    cfg, where = _compose(base)
    assert to_sweep_config(cfg, where).scenario.request_rate == []
    e = _error([*base, "++scenario.request_rate=[0]"])
    assert e.key == "scenario.request_rate" and "positive rates" in str(e)
