"""Accelerator telemetry (harness/telemetry): the tools' documented output forms parsed, the
source chosen by what the host has, and a point measured with a fake nvidia-smi / amd-smi on
PATH (harness/testing/telemetry_emulator.py) whose J/token equals the hand-integrated trace."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness import telemetry
from harness.client.health import ClientHealth
from harness.client.streaming import PhaseResult
from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.engines.hints import EngineHints
from harness.engines.registry import make_adapter
from harness.publish.curves import cost_columns
from harness.record.metrics import GpuCount
from harness.record.results import RunDir
from harness.record.validity import settings_for
from harness.records import RequestRecord
from harness.sweep.point import JobContext
from harness.sweep.runner import choose_telemetry, plan_points, run_point
from harness.telemetry import amd_smi, nvidia_smi
from harness.testing.telemetry_emulator import amd_gpu, install, nvidia_row
from harness.workloads.base import LoadLevel, Measurement, Target, Workload
from tests.helpers import NoDeployment

LAW = {"0": [300.0, 5.0], "1": [250.0, -3.0]}  # watts = a + b (now - t0)


def test_nvidia_smi_rows_parse_as_documented() -> None:
    trace = {"t0": 1.7e9, "devices": LAW, "power_na": ["1"]}
    row = nvidia_row(trace, "0", 1.7e9 + 2.0)
    r = nvidia_smi.parse_line(row, offset=-1.7e9)
    assert r is not None and r.device == "0" and r.power_w == pytest.approx(310.0)
    assert r.t == pytest.approx(2.0, abs=2e-3) and r.util_pct == 50 and r.mem_used_mib == 1024
    na = nvidia_smi.parse_line(nvidia_row(trace, "1", 1.7e9), 0.0)
    assert na is not None and na.power_w is None  # "[N/A]" is no reading, not 0 W
    assert nvidia_smi.parse_line("index, timestamp, power.draw [W]", 0.0) is None
    assert nvidia_smi.parse_line("", 0.0) is None
    assert nvidia_smi.command(0.25)[-2:] == ["-lms", "250"]


@pytest.mark.parametrize("shape", ["list", "gpu_data"])
def test_amd_smi_json_parses_in_both_shapes(shape: str) -> None:
    trace = {"t0": 0.0, "devices": LAW, "power_na": ["1"]}
    gpus = [amd_gpu(trace, d, 4.0) for d in LAW]
    text = json.dumps({"gpu_data": gpus} if shape == "gpu_data" else gpus)
    r0, r1 = amd_smi.parse(text, t=12.5)
    assert (r0.device, r0.t, r0.power_w, r0.util_pct, r0.mem_used_mib) == (
        "0", 12.5, 320.0, 50.0, 1024.0)
    assert r1.device == "1" and r1.power_w is None


def test_a_host_without_telemetry_says_so(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, no amd-smi; pynvml absent here
    monkeypatch.setitem(telemetry._MAKERS, "nvml",
                        (lambda: "pynvml is not installed", telemetry.nvml.NvmlSampler))
    c = telemetry.choose("auto")
    assert c.source == "none" and "nvidia-smi is not on PATH" in c.reason
    assert c.sampler(1.0) is None
    with pytest.raises(ValueError, match="amd-smi is not on PATH"):
        telemetry.choose("amd-smi")
    with pytest.raises(ValueError, match="unknown telemetry source 'nvsmi'"):
        telemetry.choose("nvsmi")


def test_a_named_source_the_host_lacks_is_a_config_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    sc = _sc("telemetry.source=nvidia-smi")
    with pytest.raises(ConfigError) as e:
        choose_telemetry(sc, lambda key: "the command line")
    assert e.value.key == "telemetry.source" and "not on PATH" in e.value.problem
    with pytest.raises(ConfigError, match="must be positive"):
        choose_telemetry(_sc("telemetry.period_s=0"), lambda key: "the command line")


class SleepingWorkload(Workload):
    """A warmup and a measured phase of real wall time, with known token counts."""

    kind = "sleeping"

    def __init__(self, measured_s: float = 1.5) -> None:
        self.measured_s = measured_s
        self.window_wall: tuple[float, float] = (0.0, 0.0)

    def hints(self) -> EngineHints:
        return EngineHints(prefix_caching=False, longest_request_tokens=200)

    def prepare(self, levels, body) -> None:
        pass

    def run(self, target: Target, level: LoadLevel, on_done=None) -> Measurement:
        time.sleep(0.3)  # the warmup
        start, wall = time.perf_counter(), time.time()
        time.sleep(self.measured_s)
        end = time.perf_counter()
        self.window_wall = (wall, wall + end - start)
        recs = []
        for i in range(10):
            r = RequestRecord(f"r{i}", "measured", 100, 8)
            r.send_ts, r.http_status = start + 0.1 * i, 200
            r.chunk_ts = [r.send_ts + 0.05 + 0.01 * k for k in range(8)]
            r.first_token_ts, r.last_token_ts = r.chunk_ts[0], r.chunk_ts[-1]
            r.end_ts, r.prompt_tokens, r.completion_tokens = r.chunk_ts[-1], 100, 8
            recs.append(r)
        h = ClientHealth(stamp_err_p99_ms=0.2, cpu_share=0.3)
        return Measurement(PhaseResult([], start, start, wall, h),
                           PhaseResult(recs, start, end, wall, h), {}, {})


class FakeSession(NoDeployment):
    base_url, version = "http://127.0.0.1:9", "fake 1.0"

    def scrape(self) -> dict:
        return {}

    def alive(self) -> bool:
        return True



def _sc(*overrides: str):
    return compose_sweep(["engine=endpoint", "engine.url=http://127.0.0.1:9", "run_id=unit",
                          "concurrency=[1]", "telemetry.period_s=0.2", *overrides])


def _measure(tmp_path: Path, monkeypatch, trace: dict, source: str, *overrides: str):
    monkeypatch.setenv("PATH", install(tmp_path / "bin", trace))
    sc = _sc(f"telemetry.source={source}", *overrides)
    wl = SleepingWorkload()
    ctx = JobContext(sc, "unit", "job0", make_adapter(sc, hints=wl.hints()), wl, 1, "rev",
                     settings_for(sc), GpuCount(2), telemetry=choose_telemetry(
                         sc, lambda key: "the command line"))
    run = RunDir.open(tmp_path, "unit")
    rec = run_point(ctx, FakeSession(), plan_points(sc)[0], run)
    return rec, run, wl


def _hand_joules(trace: dict, lo: float, hi: float) -> float:
    """The integral of a + b (t - t0) over [lo, hi], summed over devices."""
    t0 = trace["t0"]
    return sum(a * (hi - lo) + b * ((hi - t0) ** 2 - (lo - t0) ** 2) / 2
               for a, b in trace["devices"].values())


# nvidia-smi stamps its rows itself (to the ms): 0.1%. amd-smi's JSON has no time, so a
# reading is stamped at the middle of the call, off by up to half a (loaded) call.
@pytest.mark.parametrize(("source", "rel"), [("nvidia-smi", 1e-3), ("amd-smi", 5e-3)])
def test_measured_joules_per_token_match_the_emulated_trace(tmp_path: Path, monkeypatch,
                                                            source: str, rel: float) -> None:
    # nvidia-smi: a 4-GPU host, the point on GPUs 0 and 1 (telemetry.devices); amd-smi: 2 GPUs
    host = {**LAW, "2": [500.0, 0.0], "3": [500.0, 0.0]} if source == "nvidia-smi" else LAW
    trace = {"t0": time.time(), "devices": host}
    rec, run, wl = _measure(tmp_path, monkeypatch, trace, source, "telemetry.devices=[0,1]")
    m = rec.metrics
    assert m["power_valid"] == 1 and rec.extras["power_source"] == source, rec.extras
    hand = _hand_joules({"t0": trace["t0"], "devices": LAW}, *wl.window_wall)
    tokens = m["total_input_tokens"] + m["total_output_tokens"]
    assert m["measured_j_per_tok"] == pytest.approx(hand / tokens, rel=rel)
    assert m["measured_j_per_output_tok"] == pytest.approx(
        hand / m["total_output_tokens"], rel=rel)
    table = cost_columns(rec.flat())  # the table-based figure stays, beside the measured one
    assert table["j_per_tok"] > 0 and "measured_j_per_tok" not in table
    audit = json.loads((run.root / "power" / f"{rec.point_id}.json").read_text())
    assert audit["power_valid"] and audit["observed_gpu_ids"] == ["0", "1"]
    gpu = pq.read_table(run.root / "series" / f"{rec.point_id}.parquet").to_pylist()
    power = [r for r in gpu if r["source"] == "gpu" and r["name"] == "power_w"]
    assert {r["device"] for r in power} == set(host) and len(power) >= 2 * 4  # all kept


def test_a_gap_and_a_vanished_device_invalidate_power_but_not_the_point(
        tmp_path: Path, monkeypatch) -> None:
    # Counted from the loop's start; the warmup takes 0.3 s, then the 1.5 s window: device 0
    # prints nothing for 0.6 s inside it, device 1 stops printing inside it.
    trace = {"t0": time.time(), "devices": LAW, "faults_from": "loop",
             "gaps": [[0.7, 1.3]], "device_stops": {"1": 1.5}}
    rec, run, _ = _measure(tmp_path, monkeypatch, trace, "nvidia-smi", "telemetry.max_gap_s=0.5")
    assert rec.status == "ok" and rec.valid, rec.reasons
    assert rec.metrics["power_valid"] == 0
    assert not any(k.startswith("measured_") for k in rec.metrics)
    audit = json.loads((run.root / "power" / f"{rec.point_id}.json").read_text())
    assert audit["device_issues"] == {"0": ["sampling_gap_exceeded"],
                                      "1": ["benchmark_window_not_bracketed"]}
    assert rec.extras["power_reasons"] == ["sampling_gap_exceeded",
                                           "benchmark_window_not_bracketed"]


def test_a_broken_tool_is_a_gap_never_a_failed_point(tmp_path: Path, monkeypatch) -> None:
    trace = {"t0": time.time(), "devices": LAW}
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", install(bin_dir, trace))
    sc = _sc("telemetry.source=nvidia-smi")
    choice = choose_telemetry(sc, lambda key: "the command line")
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'NVML: driver mismatch' >&2\nexit 9\n")
    wl = SleepingWorkload(measured_s=0.2)
    ctx = JobContext(sc, "unit", "job0", make_adapter(sc, hints=wl.hints()), wl, 1, "rev",
                     settings_for(sc), GpuCount(2), telemetry=choice)
    rec = run_point(ctx, FakeSession(), plan_points(sc)[0], RunDir.open(tmp_path, "unit"))
    assert rec.status == "ok" and rec.metrics["power_valid"] == 0
    assert rec.extras["power_reasons"] == ["no_usable_power_samples"]
    assert "driver mismatch" in rec.extras["power_note"]


class FakeNvml:
    """The pynvml calls the NVML sampler makes, over two devices of the linear law."""

    def __init__(self) -> None:
        self.t0, self.shutdowns = time.time(), 0

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return str(i)

    def nvmlDeviceGetPowerUsage(self, h: str) -> int:
        a, b = LAW[h]
        return round((a + b * (time.time() - self.t0)) * 1000)  # milliwatts

    def nvmlDeviceGetUtilizationRates(self, h: str):
        return type("U", (), {"gpu": 77})()

    def nvmlDeviceGetMemoryInfo(self, h: str):
        return type("M", (), {"used": 3 << 30})()


def test_nvml_is_preferred_where_pynvml_imports(monkeypatch) -> None:
    fake = FakeNvml()
    monkeypatch.setitem(__import__("sys").modules, "pynvml", fake)
    c = telemetry.choose("auto")
    assert c.source == "nvml"
    s = c.sampler(0.05)
    with s:
        time.sleep(0.3)
    assert {r.device for r in s.readings} == {"0", "1"} and fake.shutdowns >= 2
    r = s.readings[0]
    assert r.power_w == pytest.approx(300.0, abs=3.0) and r.util_pct == 77
    assert r.mem_used_mib == 3072
