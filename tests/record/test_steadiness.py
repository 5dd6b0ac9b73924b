"""The engine's steadiness rule: decode rates read from request records, the slowest tenth
against the median, the requests named with when they decoded, and the rule's modes."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from harness.record.bench_rules import bench_rules, steadiness_rules
from harness.record.steadiness import decode_rate, steadiness_figures
from harness.record.validity import ValiditySettings, host_settings, judge
from harness.record.workload_traits import built_in_traits
from harness.records import PHASE_MEASURED, RequestRecord

FIXED = built_in_traits("fixed")
AGENTIC = built_in_traits("agentic")


def _req(i: int, decode_s: float, start: float, tokens: int = 65,
         accepted: int = -1) -> RequestRecord:
    return RequestRecord(f"r{i}", PHASE_MEASURED, 128, 64, send_ts=start,
                         first_token_ts=start + 0.05, last_token_ts=start + 0.05 + decode_s,
                         end_ts=start + 0.06 + decode_s, completion_tokens=tokens,
                         spec_accepted_tokens=accepted, http_status=200)


def _closed_loop(decode_s: list[float]) -> list[RequestRecord]:
    """One request after another, as concurrency 1 sends them."""
    out, t = [], 100.0
    for i, d in enumerate(decode_s):
        out.append(_req(i, d, t))
        t += d + 0.1
    return out


def test_a_steady_point_passes_and_a_disturbed_one_names_its_slow_requests() -> None:
    # the plain point: 3 of 10 requests 3-5x slower while other processes ran
    steady = _closed_loop([0.8, 0.82, 0.79, 0.81, 0.8, 0.83, 0.8, 0.78, 0.8, 0.81])
    rules, facts = bench_rules({}, {"num_completed": 10}, FIXED, ValiditySettings(), steady)
    assert judge(rules).valid and facts["decode_slow_ratio"] > 0.9
    disturbed = _closed_loop([0.8, 0.8, 3.2, 0.8, 2.4, 0.8, 4.0, 0.8, 0.8, 0.8])
    rules, facts = bench_rules({}, {"num_completed": 10}, FIXED, ValiditySettings(),
                               disturbed)
    v = judge(rules)
    assert not v.valid and not v.fatal
    assert [r.name for r in v.failed] == ["engine_steady"]
    assert math.isclose(facts["decode_slow_ratio"], 0.8 / 4.0, rel_tol=1e-6)
    assert "the engine was not steady" in v.reasons[0] and "r6 at 0.20x" in v.reasons[0]
    slow = facts["decode_slowest"][0]
    assert slow["id"] == "r6" and slow["to_s"] - slow["from_s"] == pytest.approx(4.0)
    # when it decoded, from the window's start: after r0..r5 and their gaps
    assert slow["from_s"] == pytest.approx(0.05 + 0.8 * 4 + 3.2 + 2.4 + 0.6, abs=1e-3)


@pytest.mark.parametrize("mode", ["invalid", "warn", "off"])
def test_modes_like_the_other_bench_rules(mode: str) -> None:
    s = ValiditySettings(steady=mode)
    disturbed = _closed_loop([0.8] * 9 + [4.0])
    rules, facts = bench_rules({}, {"num_completed": 10}, FIXED, s, disturbed)
    names = [r.name for r in rules]
    if mode == "off":
        assert "engine_steady" not in names and "decode_slow_ratio" not in facts
        return
    assert judge(rules).valid == (mode == "warn")
    if mode == "warn":
        assert "kept: validity.steady=warn" in facts["steady_warning"]
    else:
        assert "steady_warning" not in facts


def test_the_bound_is_a_setting() -> None:
    figs = steadiness_figures(_closed_loop([0.8] * 9 + [1.2]))
    assert math.isclose(figs["decode_slow_ratio"], 0.8 / 1.2, rel_tol=1e-6)
    assert judge(steadiness_rules(figs, ValiditySettings())).valid
    assert not judge(steadiness_rules(figs, ValiditySettings(steady_decile_min=0.7))).valid


def test_speculative_requests_are_judged_by_steps_not_tokens() -> None:
    # one request accepts many drafts: its token rate is twice the others', its step rate
    # the same; the rule must not read content-dependent acceptance as the engine's spread
    fast = _req(0, 0.8, 0.0, tokens=65, accepted=32)
    assert decode_rate(fast, speculative=True) == pytest.approx(32 / 0.8)
    assert decode_rate(fast, speculative=False) == pytest.approx(64 / 0.8)
    reqs = [_req(i, 0.4 if i % 2 else 0.8, i * 2.0, accepted=32 if i % 2 else 0)
            for i in range(10)]
    assert steadiness_figures(reqs, speculative=True)["decode_slow_ratio"] > 0.9
    assert steadiness_figures(reqs, speculative=False)["decode_slow_ratio"] == pytest.approx(
        80 / 120)  # token rates 80 and 160/s: the median between them
    # without per-request acceptance a speculative point is not judged
    plain = [_req(i, 0.8, i * 2.0) for i in range(10)]
    assert steadiness_figures(plain, speculative=True) == {}


def test_too_few_requests_or_a_varying_shape_are_not_judged() -> None:
    few = _closed_loop([0.8, 4.0, 0.8])
    assert bench_rules({}, {}, FIXED, ValiditySettings(), few)[1].get("decode_judged") is None
    agentic = _closed_loop([0.8] * 9 + [4.0])
    rules, facts = bench_rules({}, {"num_completed": 10}, AGENTIC, ValiditySettings(),
                               agentic)
    assert "engine_steady" not in [r.name for r in rules] and "decode_slow_ratio" not in facts
    failed = _closed_loop([0.8] * 10)
    failed[0].http_status = 500
    assert steadiness_figures(failed)["decode_judged"] == 9


def test_a_bad_setting_is_refused_naming_the_key() -> None:
    from harness.config.errors import ConfigError
    from harness.config.schema import ValidityConfig

    ok = host_settings(SimpleNamespace(validity=ValidityConfig()))
    assert ok["steady"] == "invalid" and ok["steady_decile_min"] == 0.5
    with pytest.raises(ConfigError, match=r"validity\.steady\b"):
        host_settings(SimpleNamespace(validity=ValidityConfig(steady="loose")))
    with pytest.raises(ConfigError, match=r"validity\.steady_decile_min"):
        host_settings(SimpleNamespace(validity=ValidityConfig(steady_decile_min=2.0)))
