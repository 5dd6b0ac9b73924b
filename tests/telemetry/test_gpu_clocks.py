"""GPU clocks and throttle reasons through the real nvidia-smi sampler, against a fake nvidia-smi
that prints what the real one prints (harness.testing.gpu_clocks_emulator): the driver's
field names found, the mask read, a thermal slowdown in the window marked, a power cap not."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.record.bench_rules import gpu_clock_rules, host_facts
from harness.record.validity import ValiditySettings, judge
from harness.telemetry import clocks, nvidia_smi
from harness.testing.gpu_clocks_emulator import install


def _sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trace: dict, seconds: float):
    monkeypatch.setenv("PATH", install(tmp_path / "bin", {"t0": time.time(), **trace}))
    with nvidia_smi.NvidiaSmiSampler(0.1) as s:
        assert s.wait_ready(10.0)
        t0 = time.perf_counter()
        time.sleep(seconds)
        t1 = time.perf_counter()
        assert s.wait_past(t1, 5.0)
    return s, t0, t1


def test_a_thermal_slowdown_in_the_window_is_marked(tmp_path: Path, monkeypatch) -> None:
    trace = {"devices": {"0": [100, 0], "1": [100, 0]}, "sm_mhz": 1410,
             "reasons": [[0.0, 60.0, 0x40 | 0x4]]}  # hw thermal slowdown + power cap
    s, t0, t1 = _sample(tmp_path, monkeypatch, trace, 0.6)
    assert s.fields[-2:] == ("clocks.sm", "clocks_event_reasons.active")
    f = clocks.clock_figures(s.readings, t0, t1)
    assert f["gpu_throttled_share"] == 1.0 and f["gpu_power_capped_share"] == 1.0
    assert f["gpu_throttle_reasons"] == ["hw_thermal_slowdown"]
    assert f["gpu_throttled_devices"] == ["0", "1"] and f["gpu_sm_clock_min_mhz"] == 1410
    v = judge(gpu_clock_rules(f, ValiditySettings(host="invalid")))  # judging the clocks
    assert not v.valid and "hw_thermal_slowdown" in v.reasons[0]
    warn = ValiditySettings(host="warn")
    rules = gpu_clock_rules(f, warn)
    assert judge(rules).valid and "gpu" in host_facts(rules, warn)["host_warning"].lower()
    assert gpu_clock_rules(f, ValiditySettings(host="off")) == []


def test_a_power_cap_alone_is_recorded_not_judged_on_an_older_driver(
        tmp_path: Path, monkeypatch) -> None:
    trace = {"devices": {"0": [300, 0]}, "reasons": [[0.0, 60.0, 0x4]],
             "unknown_fields": ["clocks_event_reasons.active"]}
    s, t0, t1 = _sample(tmp_path, monkeypatch, trace, 0.5)
    assert s.fields[-1] == "clocks_throttle_reasons.active"  # the pre-R535 name
    f = clocks.clock_figures(s.readings, t0, t1)
    assert f["gpu_throttled_share"] == 0.0 and f["gpu_power_capped_share"] == 1.0
    assert judge(gpu_clock_rules(f, ValiditySettings())).valid
    assert all(r.power_w == 300.0 for r in s.readings)  # power still read beside the clocks


def test_a_driver_without_clock_fields_keeps_power_and_is_not_judged(
        tmp_path: Path, monkeypatch) -> None:
    trace = {"devices": {"0": [200, 0]},
             "unknown_fields": ["clocks_event_reasons.active", "clocks_throttle_reasons.active"]}
    s, t0, t1 = _sample(tmp_path, monkeypatch, trace, 0.4)
    assert s.fields == nvidia_smi.FIELDS and s.readings
    assert all(r.clock_reasons is None and r.power_w == 200.0 for r in s.readings)
    assert clocks.clock_figures(s.readings, t0, t1) == {}
    assert gpu_clock_rules({}, ValiditySettings()) == []


def test_reason_bits_are_nvmls() -> None:
    assert clocks.reason_names(0x4 | 0x20 | 0x80) == [
        "sw_power_cap", "sw_thermal_slowdown", "hw_power_brake_slowdown"]
    assert nvidia_smi.parse_line("0, 2026/12/07 10:00:00.000, 350.5, 99, 1000, 1755, "
                                 "0x0000000000000008", 0.0,
                                 nvidia_smi.FIELDS + nvidia_smi.CLOCK_FIELD_SETS[0]
                                 ).clock_reasons == 0x8
