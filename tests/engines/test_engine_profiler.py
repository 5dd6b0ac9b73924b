"""engine.profile and engine.reset_cache_before_point against the engine emulators, which
serve /start_profile, /stop_profile, /reset_prefix_cache and /flush_cache as vLLM, SGLang and
ATOM do (harness/testing/emulator_control.py): the calls come in order, the measured window
lies inside the profiler's, warmup outside it, and the trace's path is on the point."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from harness.record.results import read_points
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server
from tests.helpers import harness

pytestmark = pytest.mark.slow


def _sweep(tmp_path: Path, engine: str, *extra: str, env: dict | None = None):
    args = ("--engine", engine, "--al", "1", "--k", "1", "--step-ms", "2",
            "--tokenizer", str(tokenizer_file()))
    with spawn_server("harness.testing.engine_emulator", *args, env=env) as port:
        r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}",
                    f"engine.family={engine}", "engine.profile=true", "concurrency=[2]",
                    "scenario.isl=32", "scenario.osl=8", "scenario.requests_per_conc=4",
                    "scenario.warmup_per_conc=1", "client.max_stamp_err_ms=20",
                    "client.max_queue_delay_ms=100", f"results_dir={tmp_path}",
                    f"run_id={engine}", *extra)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/calls") as resp:
            calls = json.loads(resp.read())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [p] = read_points(tmp_path / engine)
    df = pd.read_parquet(tmp_path / engine / "requests" / f"{p['point_id']}.parquet")
    return p, df, calls


def _window_inside(p: dict, df: pd.DataFrame, calls: list[dict]) -> None:
    start = next(c["t"] for c in calls if c["path"] == "/start_profile")
    stop = next(c["t"] for c in calls if c["path"] == "/stop_profile")
    meas, warm = df[df["phase"] == "measured"], df[df["phase"] == "warmup"]
    assert start <= meas["issue_ts"].min() and meas["end_ts"].max() <= stop
    assert warm["end_ts"].max() <= start  # warmup is not profiled
    # the point records the harness's side of the same calls
    assert p["profile_start_ts"] <= meas["issue_ts"].min()
    assert meas["end_ts"].max() <= p["profile_stop_ts"]
    assert p["profile_error"] is None


def test_sglang_profiles_the_window_and_flushes_first(tmp_path) -> None:
    p, df, calls = _sweep(tmp_path, "sglang", "engine.reset_cache_before_point=true")
    assert [c["path"] for c in calls] == ["/flush_cache", "/start_profile", "/stop_profile"]
    _window_inside(p, df, calls)
    assert p["cache_reset_error"] is None
    [trace] = p["profile_traces"]  # SGLang takes output_dir: <run>/profiles/<point>/
    assert Path(trace).parent == tmp_path / "sglang" / "profiles" / p["point_id"]
    assert json.loads(Path(trace).read_text())["decode_steps"] > 0


def test_vllm_profiles_into_its_env_dir_and_resets_the_prefix_cache(tmp_path) -> None:
    traces = tmp_path / "vllm-traces"
    p, df, calls = _sweep(tmp_path, "vllm", "engine.reset_cache_before_point=true",
                          env={"VLLM_TORCH_PROFILER_DIR": str(traces)})
    assert [c["path"] for c in calls] == ["/reset_prefix_cache", "/start_profile",
                                          "/stop_profile"]
    _window_inside(p, df, calls)
    # attached: the directory is the server's own VLLM_TORCH_PROFILER_DIR, unknown to us
    assert p["profile_trace_dir"] is None and len(list(traces.iterdir())) == 1


def test_atom_lists_its_traces_in_the_stop_reply(tmp_path) -> None:
    p, df, calls = _sweep(tmp_path, "atom", env={"ATOM_TORCH_PROFILER_DIR": str(tmp_path / "a")})
    assert [c["path"] for c in calls] == ["/start_profile", "/stop_profile"]
    _window_inside(p, df, calls)
    assert "trace.json" in p["profile_stop_reply"]


@pytest.mark.parametrize(("family", "key", "words"), [
    ("trtllm", "engine.profile=true", "trtllm serves no /start_profile"),
    ("atom", "engine.reset_cache_before_point=true", "atom offers no prefix-cache reset"),
])
def test_engines_without_the_endpoint_are_refused_before_launch(tmp_path, family, key,
                                                                words) -> None:
    r = harness("sweep", "engine=endpoint", "engine.url=http://127.0.0.1:9",
                f"engine.family={family}", key, f"results_dir={tmp_path}", "run_id=x")
    assert r.returncode != 0
    assert words in r.stderr + r.stdout and key.split("=")[0] in r.stderr + r.stdout
