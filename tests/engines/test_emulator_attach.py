"""An injected recipe end to end through attach mode against each engine's emulator
(harness/testing/engine_emulator.py serves /metrics as that engine's source writes it, with
several dp ranks): the points are valid and their realised AL is within 2% of the injected one;
an engine that realises another AL fails its point with the statistical reason. (AL 1.5 and
3.5 on every engine and dp 1/4 are verified against the same emulators, without the sweep,
in tests/engines/test_engine_emulator.py.)"""

from __future__ import annotations

import pytest

from harness.record.results import read_points
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server
from tests.helpers import harness

pytestmark = pytest.mark.slow

# SGLang's gauge is read by sampling /metrics once a second, so its points need a few seconds;
# the counter engines verify from any window.
STEP_MS = {"sglang": 20, "vllm": 2, "trtllm": 2, "atom": 2}


def _sweep(tmp_path, engine: str, al: float, bias: float = 0.0, *extra: str) -> dict:
    args = ("--engine", engine, "--dp", "2", "--al", str(al), "--k", "3",
            "--step-ms", str(STEP_MS[engine]), "--al-bias", str(bias),
            "--tokenizer", str(tokenizer_file()))
    with spawn_server("harness.testing.engine_emulator", *args) as port:
        r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}",
                    f"engine.family={engine}", "engine.can_inject_acceptance=true",
                    "speculator=mtp", "speculator.k=3", "speculator.acceptance.mode=injected",
                    f"speculator.acceptance.length={al}", "concurrency=[8]",
                    "scenario.warmup_per_conc=1", "client.max_stamp_err_ms=20",
                    "client.max_queue_delay_ms=100",
                    f"results_dir={tmp_path}", f"run_id={engine}", *extra)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [p] = read_points(tmp_path / engine)
    return p


@pytest.mark.parametrize("engine", ["sglang", "vllm", "trtllm", "atom"])
def test_an_injected_point_verifies_on_every_engine(tmp_path, engine: str) -> None:
    p = _sweep(tmp_path, engine, 2.5)
    assert p["valid"], p["invalid_reasons"]
    assert abs(p["spec_realised_al"] / 2.5 - 1) <= 0.02, p["spec_realised_al"]
    rule = next(r for r in p["validity"] if r["name"] == "acceptance_realised")
    assert rule["ok"] and p["spec_independent_draws"] >= 200
    if engine == "sglang":  # a per-rank gauge: averaged, never summed over the two ranks
        assert p["spec_al_source"] == "gauge-sampled" and len(p["spec_al_per_rank"]) == 2


def test_a_wrong_realised_al_fails_the_point(tmp_path) -> None:
    p = _sweep(tmp_path, "vllm", 2.5, bias=-0.25)
    assert not p["valid"] and p["status"] == "ok"
    assert any("outside its 99.9% interval" in r for r in p["invalid_reasons"])
