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
                         "--flavor", "sglang" if engine == "sglang" else "vllm") as rport:
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
    assert p["scenario_kind"] == "agentic"
    assert p["spec_realised_al"] is not None
    assert abs(p["spec_realised_al"] / al - 1) <= tolerance, p["spec_realised_al"]
    rule = next(r for r in p["validity"] if r["name"] == "acceptance_realised")
    assert rule["ok"], rule


def test_agentic_attach_through_a_router_verifies_injected_al(tmp_path) -> None:
    p, models = _through_router(tmp_path, "vllm")
    _verified(p, 2.5)
    assert "data" in models  # /v1/models answered through the router


@pytest.mark.parametrize("engine", [
    # Open bug, found at the end of the wave: through the router, SGLang's AL gauge averages to
    # 2.258 against an injected 2.5, the same value on every run (so not noise) and outside the
    # harness's own interval, which fails the point. Direct attach (tests/test_emulator_attach.py)
    # verifies; the router's DP-rank pinning by session header (issue 27) is the suspect.
    pytest.param("sglang", marks=pytest.mark.xfail(reason="SGLang AL gauge through the router "
                                                   "reads 2.258 for 2.5 (open bug)", strict=True)),
    "trtllm", "atom"])
def test_agentic_attach_through_a_router_on_every_engine(tmp_path, engine: str) -> None:
    p, _ = _through_router(tmp_path, engine)
    _verified(p, 2.5)
