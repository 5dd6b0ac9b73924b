"""Measured energy (harness/record/energy.py): the integral of a known trace against its hand-worked
value, and every power_valid rule made to fail by the fault it names. Pure, no processes."""

from __future__ import annotations

import math

import pytest

from harness.record import energy
from harness.sweep.point import PowerMeasurement, power_facts


def _linear(device: str, a: float, b: float, times: list[float]) -> list[tuple]:
    return [(device, t, a + b * t) for t in times]


def _grid(lo: float, hi: float, step: float) -> list[float]:
    n = round((hi - lo) / step)
    return [lo + i * step for i in range(n + 1)]


def _two_devices(times: list[float] | None = None) -> list[tuple]:
    times = times or _grid(0.0, 12.0, 1.0)
    return _linear("0", 300.0, 10.0, times) + _linear("1", 200.0, -5.0, times)


def test_joules_per_token_equal_the_hand_integrated_trace() -> None:
    # Window [1.5, 10.25]: boundaries between samples, so interpolation is exercised.
    # Hand integral of a + b t over [s, e] = a (e - s) + b (e^2 - s^2) / 2.
    s, e = 1.5, 10.25
    hand = {"0": 300 * (e - s) + 10 * (e * e - s * s) / 2,
            "1": 200 * (e - s) - 5 * (e * e - s * s) / 2}
    p = energy.integrate(_two_devices(), s, e, expected_devices=2)
    assert p.power_valid and p.reasons == ()
    for d, j in hand.items():
        assert p.energy_j[d] == pytest.approx(j, rel=1e-9)
    figures = energy.energy_figures(p, input_tokens=7000, output_tokens=1750, completed=70)
    total = sum(hand.values())
    assert figures["measured_j_per_tok"] == pytest.approx(total / 8750, rel=1e-3)
    assert figures["measured_j_per_output_tok"] == pytest.approx(total / 1750, rel=1e-3)
    assert figures["measured_total_power_w"] == pytest.approx(total / (e - s), rel=1e-3)
    assert figures["measured_avg_power_w"] == pytest.approx(total / (e - s) / 2, rel=1e-3)
    assert figures["measured_tok_s_per_mw"] == pytest.approx(
        8750 / (e - s) / (total / (e - s) / 1e6), rel=1e-3)
    assert figures["measured_j_per_request"] == pytest.approx(total / 70, rel=1e-3)


def test_a_nonlinear_trace_is_integrated_trapezoidally_per_device() -> None:
    # Hand trapezoids over samples at 0, 1, 2, 3 of 100, 400, 100, 400 W (window = samples).
    readings = [("0", float(t), w) for t, w in enumerate([100.0, 400.0, 100.0, 400.0])]
    p = energy.integrate(readings, 0.0, 3.0, expected_devices=1)
    assert p.energy_j["0"] == pytest.approx(250.0 * 3)


def test_readings_at_one_instant_are_averaged() -> None:
    readings = [*_linear("0", 100.0, 0.0, _grid(0, 4, 1)), ("0", 2.0, 300.0)]
    p = energy.integrate(readings, 0.0, 4.0)
    assert p.power_valid and p.energy_j["0"] == pytest.approx(400 + 100)  # 200 W at t=2


def test_a_device_missing_fails_the_gpu_count_rule() -> None:
    p = energy.integrate(_linear("0", 300.0, 0.0, _grid(0, 10, 1)), 1.0, 9.0,
                         expected_devices=2)
    assert not p.power_valid and p.reasons == ("expected_gpu_count_mismatch",)
    assert energy.energy_figures(p, 100, 100, 1) == {}  # never a partial figure


def test_a_device_that_stops_reporting_fails_window_coverage() -> None:
    readings = (_linear("0", 300.0, 0.0, _grid(0, 10, 1))
                + _linear("1", 300.0, 0.0, _grid(0, 6, 1)))
    p = energy.integrate(readings, 1.0, 9.0, expected_devices=2)
    assert not p.power_valid and p.reasons == ("benchmark_window_not_bracketed",)
    assert p.device_issues == {"1": ["benchmark_window_not_bracketed"]}


def test_telemetry_that_starts_late_fails_window_coverage() -> None:
    p = energy.integrate(_two_devices(_grid(2.0, 12.0, 1.0)), 1.0, 9.0, expected_devices=2)
    assert "benchmark_window_not_bracketed" in p.reasons and not p.power_valid


def test_a_sample_gap_over_the_limit_fails_and_one_at_it_passes() -> None:
    times = [t for t in _grid(0, 12, 0.5) if not 4.0 < t < 7.5]  # a 3.5 s hole
    p = energy.integrate(_two_devices(times), 1.0, 11.0, expected_devices=2)
    assert p.reasons == ("sampling_gap_exceeded",) and p.max_gap_s["0"] == pytest.approx(3.5)
    ok = energy.integrate(_two_devices(times), 1.0, 11.0, expected_devices=2, max_gap_s=3.5)
    assert ok.power_valid


def test_a_gap_outside_the_window_does_not_count() -> None:
    times = [t for t in _grid(0, 20, 0.5) if not 12.0 < t < 19.0]
    assert energy.integrate(_two_devices(times), 1.0, 11.0, expected_devices=2).power_valid


def test_bad_power_cells_fail_but_only_near_the_window() -> None:
    bad = [*_two_devices(), ("0", 5.5, None)]
    assert energy.integrate(bad, 1.0, 9.0, 2).reasons == ("invalid_power_sample",)
    negative = [*_two_devices(), ("1", 5.5, -3.0)]
    assert energy.integrate(negative, 1.0, 9.0, 2).reasons == ("invalid_power_sample",)
    far = [*_two_devices(_grid(0, 30, 1)), ("0", 29.5, None)]  # 20 s after the window
    assert energy.integrate(far, 1.0, 9.0, 2).power_valid


def test_bad_timestamps_and_missing_identities_fail() -> None:
    assert "invalid_timestamp_sample" in energy.integrate(
        [*_two_devices(), ("0", math.nan, 300.0)], 1.0, 9.0, 2).reasons
    assert "gpu_identity_missing" in energy.integrate(
        [*_two_devices(), ("", 5.0, 300.0)], 1.0, 9.0, 2).reasons


def test_one_sample_per_device_is_not_enough() -> None:
    p = energy.integrate([("0", 5.0, 300.0)], 1.0, 9.0, 1)
    assert p.reasons == ("insufficient_power_samples",)


def test_no_samples_and_bad_windows_are_named() -> None:
    assert energy.integrate([], 1.0, 9.0, 1).reasons == ("no_usable_power_samples",)
    assert energy.integrate(_two_devices(), 9.0, 1.0).reasons == ("invalid_benchmark_window",)
    assert energy.integrate(_two_devices(), 1.0, 9.0, max_gap_s=0).reasons == (
        "invalid_max_sample_gap",)


def test_the_point_says_when_nothing_was_sampled() -> None:
    facts = power_facts(PowerMeasurement("none", "no accelerator telemetry on this host"), {})
    assert facts == {"power_valid": 0, "power_source": "none",
                     "power_reasons": ["no accelerator telemetry on this host"]}
    p = energy.integrate(_two_devices(), 1.0, 9.0, 2)
    m = {"total_input_tokens": 800, "total_output_tokens": 200, "num_completed": 10}
    valid = power_facts(PowerMeasurement("nvidia-smi", "", p), m)
    assert valid["power_valid"] == 1 and valid["power_reasons"] == []
    assert valid["measured_j_per_tok"] == pytest.approx(p.total_energy_j / 1000)
    audit = energy.audit(p, "nvidia-smi", valid, 3.0)
    assert audit["power_valid"] and audit["observed_gpu_ids"] == ["0", "1"]
    assert audit["integration_method"] == energy.METHOD


def test_require_power_makes_an_invalid_measurement_an_invalid_point() -> None:
    from harness.sweep.point import power_rule

    none = power_facts(PowerMeasurement("none", "no accelerator telemetry on this host"), {})
    assert power_rule(none, required=False) == []  # upstream's default: best-effort
    [rule] = power_rule(none, required=True)
    assert not rule.ok and not rule.fatal and "no accelerator telemetry" in rule.message
    p = energy.integrate(_two_devices(), 1.0, 9.0, 2)
    valid = power_facts(PowerMeasurement("nvidia-smi", "", p), {"total_output_tokens": 10})
    assert power_rule(valid, required=True)[0].ok
