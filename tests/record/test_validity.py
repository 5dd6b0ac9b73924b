"""Every validity rule on synthetic metrics: each passes when it should and fails, with its
observed value, bound and remedy, when it should not (no engine, no network)."""

from __future__ import annotations

import math

import pytest

from harness.record.validity import (
    Rule,
    Validity,
    ValiditySettings,
    acceptance_rule,
    client_rules,
    engine_rules,
    judge,
    request_rules,
)
from harness.workloads.agentic_lanes import agentic_rules

S = ValiditySettings()
GOOD = {"num_requests": 100, "num_failed": 0, "num_prompt_mismatch": 0, "num_usage_missing": 0,
        "num_short_output": 0, "num_long_output": 0}


def _rule(rules: list[Rule], name: str) -> Rule:
    return next(r for r in rules if r.name == name)


def test_a_clean_point_passes_every_request_rule() -> None:
    rules = request_rules(GOOD, S)
    assert all(r.ok for r in rules) and judge(rules).valid
    assert {r.name for r in rules} == {"any_request_succeeded", "failed_share", "prompt_lengths",
                                       "usage_reported", "full_outputs", "bounded_outputs"}


def test_no_measured_requests_is_fatal() -> None:
    v = judge(request_rules({**GOOD, "num_requests": 0}, S))
    assert not v.valid and v.fatal and "no measured requests" in v.reasons[0]


@pytest.mark.parametrize(("failed", "ok"), [(5, True), (6, False)])
def test_failed_share_bound(failed: int, ok: bool) -> None:
    r = _rule(request_rules({**GOOD, "num_failed": failed}, S), "failed_share")
    assert r.ok is ok and r.observed == failed / 100 and r.bound == "<= 5%"
    assert ok or ("6 of 100 requests failed" in r.message and "Parquet" in r.remedy)


def test_every_request_failing_makes_the_point_failed_not_just_invalid() -> None:
    v = judge(request_rules({**GOOD, "num_failed": 100}, S))
    assert v.fatal and v.reasons[0].startswith("all 100 measured requests failed")


@pytest.mark.parametrize(("key", "name", "words"), [
    ("num_prompt_mismatch", "prompt_lengths", "different prompt length"),
    ("num_usage_missing", "usage_reported", "without usage"),
    ("num_short_output", "full_outputs", "before max_tokens"),
    ("num_long_output", "bounded_outputs", "more tokens than max_tokens"),
])
def test_count_rules_fail_on_one_offending_request(key: str, name: str, words: str) -> None:
    r = _rule(request_rules({**GOOD, key: 1}, S), name)
    assert not r.ok and r.observed == 1 and words in r.message and r.remedy


def test_client_rules_use_the_settings_thresholds() -> None:
    ok = client_rules({"client_stamp_err_p99_ms": 0.9, "client_cpu_share": 0.5}, S)
    assert all(r.ok for r in ok)
    bad = client_rules({"client_stamp_err_p99_ms": 1.5, "client_cpu_share": 0.99}, S)
    assert [r.ok for r in bad][:2] == [False, False]  # stamp error, CPU share
    assert "1.5 ms > 1 ms" in bad[0].message and "lower concurrency" in bad[0].remedy
    loose = client_rules({"client_stamp_err_p99_ms": 1.5}, ValiditySettings(max_stamp_err_ms=20))
    assert loose[0].ok
    # no measurement is no evidence against the point
    assert all(r.ok for r in client_rules({"client_stamp_err_p99_ms": math.nan}, S))


def test_engine_rules_are_fatal_and_carry_the_failure() -> None:
    assert all(r.ok for r in engine_rules(True, False, ""))
    dead = judge(engine_rules(False, False, "engine process died (exit code -9)"))
    assert dead.fatal and "exit code -9" in dead.reasons[0]
    hung = judge(engine_rules(True, True, "engine hung: most requests received nothing"))
    assert hung.fatal and [r.name for r in hung.failed] == ["engine_responsive"]


def test_acceptance_rule_is_statistical() -> None:
    assert acceptance_rule("real", 2.5, 2.0, 1000, 3, S) == []
    ok = acceptance_rule("injected", 2.5, 2.51, 5000, 3, S)[0]
    assert ok.ok and "5000 draws" in ok.message
    off = acceptance_rule("injected", 2.5, 2.0, 5000, 3, S)[0]
    assert not off.ok and "outside its 99.9% interval" in off.message
    few = acceptance_rule("injected", 2.5, 2.45, 87, 3, S)[0]
    assert not few.ok and "proposed 87 drafts" in few.message  # too few is its own reason
    none = acceptance_rule("injected", 2.5, None, None, 3, S, "sglang: no counters moved")[0]
    assert not none.ok and "no counters moved" in none.message


def test_agentic_rules() -> None:
    s = ValiditySettings(min_measured_s=900, max_overflow_share=0.01)
    ok = agentic_rules({"num_requests": 200, "num_context_overflow": 2, "duration_s": 901}, s)
    assert all(r.ok for r in ok)
    bad = agentic_rules({"num_requests": 200, "num_context_overflow": 3, "duration_s": 45}, s)
    assert [r.name for r in bad if not r.ok] == ["measured_duration", "context_overflow"]
    assert "raise scenario.duration_s" in bad[0].remedy


def test_a_verdict_round_trips_through_json() -> None:
    v = judge(request_rules({**GOOD, "num_failed": 50}, S), engine_rules(True, False, ""))
    back = Validity.from_json(v.to_json())
    assert back == v and not back.valid and back.reasons == v.reasons
