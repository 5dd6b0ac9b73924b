"""The real thing: the embedded engine, a two-point sweep, results and dashboard checked."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from harness.record.results import read_points
from tests.helpers import assert_valid_unless_the_instrument_flagged, engine_pids, harness

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    r = harness("sweep", "concurrency=[1,2]", f"results_dir={root}", "run_id=e2e")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "run directory:" in r.stdout and "tok/s/gpu" in r.stdout  # the summary table
    return root / "e2e"


def test_points_carry_identity_metrics_and_provenance(run_dir) -> None:
    points = sorted(read_points(run_dir), key=lambda p: p["conc"])
    assert [p["conc"] for p in points] == [1, 2]
    for p in points:
        # the client's verdict on itself is the accuracy tests' subject, not this one's
        assert_valid_unless_the_instrument_flagged(p)
        assert (p["model"], p["chip"], p["engine"], p["precision"]) == (
            "smollm2-135m", "cpu", "llamacpp", "q4_1")
        assert p["engine_version"].startswith("xllamacpp")
        assert (p["isl"], p["osl"], p["spec_method"], p["tp"], p["gpus"]) == (
            128, 64, "none", 1, 1)
        assert p["num_requests"] == 10 * p["conc"] and p["num_failed"] == 0
        assert p["num_prompt_mismatch"] == 0
        assert isinstance(p["seed"], int) and p["harness_revision"]
        assert 0 < p["median_ttft"] < p["median_e2el"]
        tokens = p["total_input_tokens"] + p["total_output_tokens"]
        assert p["tput_per_gpu"] == pytest.approx(tokens / p["duration_s"])
        assert p["median_intvty"] == pytest.approx(1 / p["median_tpot"])
        # the server counted what the client counted
        assert p["server_generation_tokens"] >= p["total_output_tokens"]
    job = "job0-fixed-128x64-llamacpp-none"
    assert (run_dir / "configs" / f"{job}.yaml").is_file()
    prov = json.loads((run_dir / "run.json").read_text())
    assert prov["invocations"][0]["versions"]["xllamacpp"]
    assert (run_dir / "servers" / f"{job}.log").stat().st_size > 0
    assert not engine_pids(), "a server was left running"


def test_request_records_are_complete(run_dir) -> None:
    for p in read_points(run_dir):
        df = pd.read_parquet(run_dir / "requests" / f"{p['point_id']}.parquet")
        c = p["conc"]
        assert len(df) == 12 * c and (df["phase"] == "warmup").sum() == 2 * c
        assert (df["error"] == "").all()
        assert (df["prompt_tokens"] == df["expected_prompt_tokens"]).all()
        assert (df["completion_tokens"] == df["max_tokens"]).all()  # ignore_eos honoured
        assert df["expected_prompt_tokens"].between(int(0.8 * 128), 128).all()
        assert df["max_tokens"].between(int(0.8 * 64), 64).all()
        assert (df["send_ts"] < df["first_token_ts"]).all()
        assert (df["first_token_ts"] <= df["last_token_ts"]).all()
        assert (df["last_token_ts"] <= df["end_ts"]).all()


def test_two_runs_never_share_prompts(run_dir, tmp_path) -> None:
    r = harness("sweep", "concurrency=[1]", "scenario.requests_per_conc=1",
                "scenario.warmup_per_conc=0", f"results_dir={tmp_path}", "run_id=other")
    assert r.returncode == 0, r.stderr[-2000:]
    other = pd.read_parquet(next((tmp_path / "other" / "requests").glob("*.parquet")))
    first = pd.concat(pd.read_parquet(f) for f in (run_dir / "requests").glob("*.parquet"))

    def hashes(df: pd.DataFrame) -> set[str]:
        return {json.loads(t)["prompt_sha1"] for t in df["tags"]}

    assert read_points(tmp_path / "other")[0]["seed"] != read_points(run_dir)[0]["seed"]
    measured = first[first["phase"] == "measured"]
    assert len(hashes(measured)) == len(measured)  # no measured prompt repeats within a run
    # warmups are copies of their point's first measured prompt, as InferenceX warms up
    assert len(hashes(first)) == len(measured)
    assert not hashes(other) & hashes(first)


def test_dashboard_is_self_contained_with_both_points(run_dir, tmp_path) -> None:
    out = tmp_path / "d.html"
    r = harness("dashboard", str(run_dir), "--out", str(out))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "Plotly" in html and "<script src=" not in html  # plotly.js inside, no network
    data = json.loads(re.search(r'id="harness-data">(.*?)</script>', html, re.S).group(1))
    assert sorted(p["conc"] for p in data["points"]) == [1, 2]
    assert all(p["series"] == "smollm2-135m q4_1 · cpu · llamacpp" for p in data["points"])
    assert all((out.parent / p["page"]).exists() for p in data["points"])  # markers' pages
