"""The runner's point loop and the workload implementations on synthetic records: no engine,
no network. What lands on disk, in which order, and with which verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.client.health import ClientHealth
from harness.client.streaming import PhaseResult
from harness.config.compose import compose_sweep
from harness.engines.hints import EngineHints
from harness.engines.registry import make_adapter
from harness.record.metrics import CATALOGUE, GpuCount
from harness.record.point_load import load_records
from harness.record.results import RunDir
from harness.record.validity import settings_for
from harness.records import RequestRecord
from harness.sweep.point import JobContext
from harness.sweep.runner import plan_points, run_point
from harness.workloads.agentic_lanes import AgenticLaneWorkload
from harness.workloads.base import LoadLevel, Measurement, Target, Workload
from harness.workloads.fixed_seq import FixedSequenceWorkload
from tests.helpers import NoDeployment


def _record(i: int, ok: bool = True, tokens: int = 8, max_tokens: int = 8) -> RequestRecord:
    r = RequestRecord(f"r{i}", "measured", 100, max_tokens)
    r.send_ts, r.http_status = float(i), 200 if ok else 500
    if ok:
        r.chunk_ts = [i + 0.1 + 0.01 * k for k in range(tokens)]
        r.first_token_ts, r.last_token_ts, r.end_ts = r.chunk_ts[0], r.chunk_ts[-1], i + 0.2
        r.prompt_tokens, r.completion_tokens = 100, tokens
    else:
        r.error = "HTTP 500: boom"
    return r


class SyntheticWorkload(Workload):
    """Hands back prepared records: the runner cannot tell it from a real workload."""

    kind = "synthetic"

    def __init__(self, records: list[RequestRecord]) -> None:
        self.records = records

    def hints(self) -> EngineHints:
        return EngineHints(prefix_caching=False, longest_request_tokens=200)

    def prepare(self, levels, body) -> None:
        self.body = body

    def run(self, target: Target, level: LoadLevel, on_done=None) -> Measurement:
        h = ClientHealth(stamp_err_p99_ms=0.2, cpu_share=0.3)
        phase = PhaseResult(self.records, 0.0, 10.0, 1.7e9, h)
        # an attached endpoint: the counters tell which engine it is (vLLM here)
        return Measurement(PhaseResult([], 0.0, 0.0, 1.7e9, h), phase,
                           {"vllm:prompt_tokens_total": 0.0,
                            "vllm:generation_tokens_total": 0.0},
                           {"vllm:prompt_tokens_total": 1000.0,
                            "vllm:generation_tokens_total": 80.0})


class FakeSession(NoDeployment):
    base_url, version = "http://127.0.0.1:9", "fake 1.0"

    def __init__(self, alive: bool = True) -> None:
        self._alive = alive

    def scrape(self) -> dict:
        return {}

    def alive(self) -> bool:
        return self._alive

    def failure_reason(self) -> str:
        return "engine process died (exit code -9)"

    def hang_reason(self, s: float) -> str:
        return "engine hung"


def _job(tmp: Path, records: list[RequestRecord]):
    sc = compose_sweep(["engine=endpoint", "engine.url=http://127.0.0.1:9", "run_id=unit",
                        "concurrency=[1,2]"])
    wl = SyntheticWorkload(records)
    adapter = make_adapter(sc, hints=wl.hints())
    ctx = JobContext(sc, "unit", "job0", adapter, wl, 1, "rev", settings_for(sc), GpuCount(1))
    return ctx, plan_points(sc), RunDir.open(tmp, "unit")


def test_a_point_lands_on_disk_whole_and_valid(tmp_path: Path) -> None:
    ctx, planned, run = _job(tmp_path, [_record(i) for i in range(10)])
    rec = run_point(ctx, FakeSession(), planned[0], run)
    assert rec.valid and rec.status == "ok" and rec.metrics["num_requests"] == 10
    assert rec.metrics["server_prompt_tokens"] == 1000.0  # engine facts from /metrics deltas
    assert rec.metrics["server_generation_tokens"] == 80.0
    assert (run.root / "requests" / f"{rec.point_id}.parquet").is_file()
    assert (run.root / "server_metrics" / f"{rec.point_id}.json").is_file()
    [back] = load_records([run.root])
    assert back.point_id == rec.point_id == planned[0].level.point_id
    assert back.validity == rec.validity and back.get("median_tpot") == pytest.approx(0.01)
    numeric = {k for k, v in back.flat().items() if isinstance(v, int | float)
               and not isinstance(v, bool)}
    ident = {"isl", "osl", "conc", "gpus", "tp", "ep", "pp", "pcp", "spec_k", "repeat", "seed",
             "measured_start_wall", "chip_tdp_w", "chip_power_kw_all_in", "chip_cost_neocloud",
             "chip_cost_hyperscaler", "chip_cost_rental_3yr", "schema_version"}
    assert numeric - ident <= set(CATALOGUE), numeric - ident - set(CATALOGUE)


def test_a_dead_engine_fails_the_point_and_resume_redoes_it(tmp_path: Path) -> None:
    ctx, planned, run = _job(tmp_path, [_record(i) for i in range(10)])
    rec = run_point(ctx, FakeSession(alive=False), planned[0], run)
    assert rec.status == "failed" and "exit code -9" in rec.reasons[0]
    assert planned[0].level.point_id not in run.completed_ids()


def test_every_request_failing_is_a_failed_point(tmp_path: Path) -> None:
    ctx, planned, run = _job(tmp_path, [_record(i, ok=False) for i in range(5)])
    rec = run_point(ctx, FakeSession(), planned[1], run)
    assert rec.status == "failed" and rec.reasons[0].startswith("all 5 measured requests")
    assert run.completed_ids() == set()


def test_outputs_beyond_max_tokens_invalidate(tmp_path: Path) -> None:
    recs = [_record(i) for i in range(9)] + [_record(9, tokens=24, max_tokens=8)]
    ctx, planned, run = _job(tmp_path, recs)
    rec = run_point(ctx, FakeSession(), planned[0], run)
    assert not rec.valid and rec.status == "ok"
    assert [r.name for r in rec.validity.failed] == ["bounded_outputs"]


def test_adapters_are_complete_once_built() -> None:
    sc = compose_sweep(["engine=vllm", "model=llama-3.3-70b", "chip=h100", "run_id=u"])
    a = make_adapter(sc, hints=EngineHints(True, 5000, 2))
    with pytest.raises(AttributeError, match="complete once built"):
        a.hints = EngineHints(False, 1)
    argv = a.launch_plan(8000, 16).argv
    assert "--no-enable-prefix-caching" not in argv  # the workload asked for prefix caching
    assert argv[argv.index("--max-num-seqs") + 1] == "32"  # 2 x concurrency (AgentX headroom)
    assert argv[argv.index("--max-model-len") + 1] == str(5000 + 256)


def test_the_fixed_workload_builds_exact_prompts_per_point(smollm2_tokenizer) -> None:
    sc = compose_sweep(["run_id=u", "concurrency=[1,2]", "scenario.requests_per_conc=2",
                        "scenario.warmup_per_conc=1"])
    wl = FixedSequenceWorkload(sc, smollm2_tokenizer)
    assert wl.hints() == EngineHints(False, 128 + 64)
    levels = [p.level for p in plan_points(sc)]
    wl.prepare(levels, {"model": "m", "temperature": 0.0})
    for lv in levels:
        reqs = wl.requests[lv.point_id]
        assert len(reqs.warmup) == lv.concurrency and len(reqs.measured) == 2 * lv.concurrency
        assert all(b'"temperature":0.0' in s.body for s in reqs.measured)
        assert wl.expected_requests(lv) == 3 * lv.concurrency


def test_the_agentic_workload_loads_its_traces_before_any_engine(smollm2_tokenizer) -> None:
    root = Path(__file__).resolve().parents[2]
    sc = compose_sweep(["run_id=u", "scenarios=agentic-weka-cpu"])
    wl = AgenticLaneWorkload(sc, smollm2_tokenizer, root)
    h = wl.hints()
    assert h.prefix_caching and h.longest_request_tokens == wl.longest > 0
    assert h.running_per_concurrency == 2
    facts = wl.facts(Measurement(PhaseResult([], 0, 0, 0, ClientHealth()),
                                 PhaseResult([], 0, 1, 0, ClientHealth()), {}, {}),
                     {"request_tput": 3.0})
    assert facts["qps"] == 3.0 and facts["num_context_overflow"] == 0
