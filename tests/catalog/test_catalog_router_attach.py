"""An AgentX-style key measured in attach mode through a router, as InferenceX's agentic
DP-attention rows run (router on PORT, engine behind it; benchmarks/single_node/agentic/
dsv4_fp4_b200_{vllm,sglang}_mtp.sh@843c6254): the engine emulator with two dp ranks behind the
router emulator, the harness's client talking to the router (engine.url) and scraping the
engine's own counters behind it (engine.metrics_url). The injected AL must be realised and
verified; the router must have carried the traffic (its own /metrics counts it)."""

from __future__ import annotations

import pytest

from harness.engines.process import get_text
from harness.record.results import read_points
from harness.speculation.acceptance import synthetic_rates
from harness.speculation.verify import count_moments
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server
from tests.helpers import harness

# Each run is a whole `harness sweep` (a minute or more on a loaded 2-core host): slow.
pytestmark = pytest.mark.slow

STEP_MS = {"sglang": 20, "vllm": 2, "trtllm": 2, "atom": 2}
AGENTIC_SHORT = ["scenarios=agentic-weka-cpu", "scenario.duration_s=4",
                 "scenario.min_measured_s=1", "scenario.warmup_requests_per_lane=1",
                 "scenario.max_failed_share=0.5", "speculator.acceptance.min_drafts=10",
                 "client.max_stall_share=1"]


def _through_router(tmp_path, engine: str, al: float = 2.5) -> tuple[dict, str]:
    args = ("--engine", engine, "--dp", "2", "--al", str(al), "--k", "3",
            "--step-ms", str(STEP_MS[engine]), "--tokenizer", str(tokenizer_file()))
    with spawn_server("harness.testing.engine_emulator", *args) as eport, \
            spawn_server("harness.testing.router_emulator", "--worker-urls",
                         f"http://127.0.0.1:{eport}", "--intra-node-data-parallel-size", "2",
                         "--flavor", "sglang" if engine == "sglang" else "vllm",
                         *(["--dp-aware"] if engine == "sglang" else [])) as rport:
        r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{rport}",
                    f"engine.metrics_url=http://127.0.0.1:{eport}",
                    f"engine.family={engine}", "engine.can_inject_acceptance=true",
                    "speculator=mtp", "speculator.k=3", "speculator.acceptance.mode=injected",
                    f"speculator.acceptance.length={al}", "concurrency=[4]",
                    "client.max_stamp_err_ms=20", "client.max_queue_delay_ms=100",
                    *AGENTIC_SHORT, f"results_dir={tmp_path}", f"run_id={engine}",
                    # SGLang's AL is a gauge sampled once a second: a longer window
                    *(["scenario.duration_s=15"] if engine == "sglang" else []))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        [p] = read_points(tmp_path / engine)
        return p, get_text(f"http://127.0.0.1:{rport}/v1/models") or ""


def _verified(p: dict, al: float, tolerance: float = 0.05) -> None:
    """Verified, and near what the engine's metric should read: the injected AL, or for
    SGLang (which counts only the tokens a request's finishing step kept) what
    harness.speculation.truncation expects of AgentX's short replies - clearly below the injected AL
    here (median 5 output tokens), which is why comparing with 2.5 failed honest points. The
    sampled gauge of a 15 s point is a few 40-step intervals, and a loaded host gets ~30 drafts
    into a 4 s point: the tolerance is the larger of `tolerance` and 4 standard errors."""
    assert p["scenario_kind"] == "agentic"
    assert p["spec_realised_al"] is not None
    rule = next(r for r in p["validity"] if r["name"] == "acceptance_realised")
    assert rule["ok"], rule
    target = p.get("spec_expected_al") or al
    if p["spec_al_source"] == "gauge-sampled":
        assert target < al - 0.05, p  # the cut at a request's end matters on these replies
    sd = count_moments(synthetic_rates(al, 3))[1] ** 0.5
    tolerance = max(tolerance, 4 * sd / p["spec_independent_draws"] ** 0.5 / target)
    assert abs(p["spec_realised_al"] / target - 1) <= tolerance, (p["spec_realised_al"], target)


def test_agentic_attach_through_a_router_verifies_injected_al(tmp_path) -> None:
    p, models = _through_router(tmp_path, "vllm")
    _verified(p, 2.5)
    assert "data" in models  # /v1/models answered through the router


@pytest.mark.parametrize("engine", [
    # SGLang read 2.15-2.33 for an injected 2.5 here and failed its point: not the router (the
    # same point without it read the same) but AgentX's short replies, whose last verify step
    # SGLang cuts at the request's end before counting it; the harness now judges the AL
    # against what such a metric reads (harness/speculation/truncation.py).
    "sglang", "trtllm", "atom"])
def test_agentic_attach_through_a_router_on_every_engine(tmp_path, engine: str) -> None:
    p, _ = _through_router(tmp_path, engine)
    _verified(p, 2.5)
