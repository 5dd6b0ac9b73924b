"""`harness export inferencex`: a real run (two fixed-sequence points and one agentic point
against the scripted server), exported, then read back the way InferenceX reads it.

The checks apply upstream's documented formulas to the exported files (docs/upstream/
inferencex.md §4.2 for process_result.py, docs/upstream/agentx.md §2.3a for the AgentX
aggregation) and compare with our point's own values; nothing of ours is recomputed here.
"""

from __future__ import annotations

import itertools
import json
import statistics
import uuid
from pathlib import Path

import pytest

from harness.record.results import read_points
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server
from tests.helpers import harness

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]

# docs/upstream/inferencex.md §4.2: process_result.py's environment (base, single node, and the
# newer layout's parallelism sizes).
FIXED_ENV = ("RUNNER_TYPE", "FRAMEWORK", "PRECISION", "SPEC_DECODING", "RESULT_FILENAME", "ISL",
             "OSL", "DISAGG", "MODEL_PREFIX", "IMAGE", "IS_MULTINODE", "TP", "EP_SIZE",
             "DP_ATTENTION", "PP_SIZE", "DCP_SIZE", "PCP_SIZE")
# docs/upstream/agentx.md §2.1 (single node): process_agentic_result.py's environment.
AGENTIC_ENV = ("RESULT_FILENAME", "RESULT_DIR", "AGENTIC_OUTPUT_DIR", "KV_OFFLOADING",
               "KV_OFFLOAD_BACKEND", "KV_OFFLOAD_BACKEND_METADATA", "IS_MULTINODE", "TP",
               "EP_SIZE", "DP_ATTENTION", "PP_SIZE", "DCP_SIZE", "PCP_SIZE", "FRAMEWORK",
               "RUNNER_TYPE", "CONC", "IMAGE", "MODEL", "MODEL_PREFIX", "PRECISION",
               "SPEC_DECODING", "DISAGG", "TOTAL_CPU_DRAM_GB", "ROUTER_METADATA",
               "KV_P2P_TRANSFER")
# docs/upstream/inferencex.md §4.2: the --save-result keys process_result.py reads.
SAVED_KEYS = ("max_concurrency", "model_id", "total_token_throughput", "output_throughput",
              "request_throughput", "duration", "completed", "total_input_tokens",
              "total_output_tokens")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    sweeps = (["concurrency=[1,4]", "scenario.requests_per_conc=3",
               "scenario.warmup_per_conc=1"],
              ["scenarios=agentic-weka-cpu", "concurrency=[1]", "scenario.duration_s=4"])
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "20", "--itl-ms", "2",
                      "--tokens-per-chunk", "1", "2", "--tokenizer",
                      str(tokenizer_file())) as port:
        for extra in sweeps:
            r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}",
                        *extra, f"results_dir={tmp}", "run_id=x")
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = tmp / "out"
    r = harness("export", "inferencex", str(tmp / "x"), "--out", str(out), "--include-invalid")
    assert r.returncode == 0, r.stderr
    points = {p["point_id"]: p for p in read_points(tmp / "x")}
    return tmp / "x", out, points, r


def _env(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    assert all("=" in line and not line.startswith("#") for line in lines), lines
    return dict(line.split("=", 1) for line in lines)


def _exports(out: Path) -> dict[str, tuple[dict[str, str], Path]]:
    """point_id -> (its env, its RESULT_FILENAME path stem), found through the files."""
    found = {}
    for env_path in out.glob("*.env"):
        env = _env(env_path)
        assert env["RESULT_FILENAME"] == env_path.stem
        json_path = out / f"{env_path.stem}.json"
        if json_path.is_file():
            pid = json.loads(json_path.read_text())["harness_point_id"]
        else:
            agg = out / env["RESULT_DIR"] / "aiperf_artifacts" / "profile_export_aiperf.json"
            pid = json.loads(agg.read_text())["benchmark_id"]
        found[pid] = (env, out / env_path.stem)
    return found


def test_include_invalid_exports_every_point_marked(exported) -> None:
    _, out, points, r = exported
    found = _exports(out)
    assert set(found) == set(points)
    invalid = [p for p in points.values() if not p["valid"]]
    assert invalid, "the 4 s agentic point is below min_measured_s and must be invalid"
    warnings = [x for x in r.stderr.splitlines() if "warning:" in x]
    assert len(warnings) == len(invalid)
    for p in invalid:
        assert any(p["point_id"] in w for w in warnings)
        assert found[p["point_id"]][0]["RESULT_FILENAME"].endswith("_INVALID")
    for p in points.values():
        if p["valid"]:
            assert not found[p["point_id"]][0]["RESULT_FILENAME"].endswith("_INVALID")
    assert "exported 3 points (2 fixed-sequence, 1 agentic)" in r.stdout


def test_by_default_only_valid_points_are_exported(exported, tmp_path) -> None:
    """InferenceX's pipeline has no notion of validity: a point we rejected must not become a
    published number there."""
    run, _, points, _ = exported
    r = harness("export", "inferencex", str(run), "--out", str(tmp_path / "o"))
    if not any(p["valid"] for p in points.values()):
        # a noisy host can invalidate every point: nothing to export is exit 2, one line
        # (tests/cli/test_cli_contract.py holds the deterministic case)
        assert r.returncode == 2 and "--include-invalid" in r.stderr, r.stderr
        assert not (tmp_path / "o").exists()
        return
    assert r.returncode == 0, r.stderr
    found = _exports(tmp_path / "o") if (tmp_path / "o").exists() else {}
    assert set(found) == {pid for pid, p in points.items() if p["valid"]}
    invalid = [pid for pid, p in points.items() if not p["valid"]]
    assert f"left out {len(invalid)} invalid point(s)" in r.stdout
    assert all(pid in r.stdout for pid in invalid)
    assert "min_measured_s" in r.stdout or "measured" in r.stdout


def test_fixed_points_through_process_result_formulas(exported) -> None:
    _, out, points, _ = exported
    fixed = [(pid, e) for pid, e in _exports(out).items()
             if points[pid]["scenario_kind"] != "agentic"]
    assert len(fixed) == 2
    for pid, (env, stem) in fixed:
        p, res = points[pid], json.loads(stem.with_suffix(".json").read_text())
        assert not {k for k in SAVED_KEYS if k not in res}
        # infx/results/fixed_sequence.py: GPUs = TP x PP_SIZE x PCP_SIZE (the old script: TP)
        gpus = int(env["TP"]) * int(env.get("PP_SIZE", 1)) * int(env.get("PCP_SIZE", 1))
        assert gpus == int(env["TP"]) == p["gpus"]
        upstream = {
            "tput_per_gpu": res["total_token_throughput"] / gpus,
            "output_tput_per_gpu": res["output_throughput"] / gpus,
            "input_tput_per_gpu": (res["total_token_throughput"] - res["output_throughput"])
            / gpus,
            "median_intvty": 1000 / res["median_tpot_ms"],
            "p99_intvty": 1000 / res["p99_tpot_ms"],
            "median_ttft": res["median_ttft_ms"] / 1000,
        }
        # and the generic rules: every `*ms` key / 1000, every tpot key -> 1000 / value
        for k, v in res.items():
            if k.endswith("ms"):
                upstream[k.replace("_ms", "")] = v / 1000
            if "tpot" in k and k != "std_tpot_ms":  # 1000/std is no statistic of ours
                upstream[k.replace("_ms", "").replace("tpot", "intvty")] = 1000 / v
        for key, value in upstream.items():
            assert value == pytest.approx(p[key], rel=1e-9), key
        assert res["max_concurrency"] == p["conc"] and res["completed"] == p["num_completed"]
        assert (res["total_input_tokens"], res["total_output_tokens"]) == \
            (p["total_input_tokens"], p["total_output_tokens"])
        assert res["model_id"] == p["hf_id"] and res["duration"] == p["duration_s"]


def test_fixed_result_filename_is_upstreams_template(exported) -> None:
    _, out, points, _ = exported
    for pid, (env, stem) in _exports(out).items():
        p = points[pid]
        # .github/workflows/benchmark-tmpl.yml@0a2e309 (docs/upstream/inferencex.md §1.4)
        want = (f"{env['EXP_NAME']}_{env['PRECISION']}_{env['FRAMEWORK']}_tp{env['TP']}"
                f"_ep{env['EP_SIZE']}_dpa_{env['DP_ATTENTION']}_conc{env['CONC']}"
                f"_{env['RUNNER_TYPE']}") + ("" if p["valid"] else "_INVALID")  # --include-invalid
        assert stem.name == env["RESULT_FILENAME"] == want
        assert env["RUNNER_TYPE"] == p["chip"] and env["CONC"] == str(p["conc"])
        if p["scenario_kind"] != "agentic":  # 128/64 is none of their shapes: "{isl}_{osl}"
            assert env["EXP_NAME"] == f"{env['MODEL_PREFIX']}_{p['isl']}_{p['osl']}"


def test_env_files_hold_every_documented_variable(exported) -> None:
    _, out, points, _ = exported
    docs = (REPO / "docs" / "upstream" / "inferencex.md").read_text() \
        + (REPO / "docs" / "upstream" / "agentx.md").read_text()
    for name in {*FIXED_ENV, *AGENTIC_ENV}:
        assert name in docs, f"{name} is not in docs/upstream (a typo in this test?)"
    for pid, (env, _stem) in _exports(out).items():
        agentic = points[pid]["scenario_kind"] == "agentic"
        required = AGENTIC_ENV if agentic else FIXED_ENV
        assert not [k for k in required if k not in env], pid
        if agentic:  # RESULT_DIR is relative to the export directory
            assert (out / env["RESULT_DIR"] / "aiperf_artifacts" / "profile_export.jsonl"
                    ).is_file()
            assert env["KV_OFFLOADING"] == "none" and env["KV_OFFLOAD_BACKEND"] == ""


def _percentile(data: list[float], p: float) -> float:
    """infx/results/agentic/common.py's percentile: linear interpolation at (n-1)p/100."""
    s = sorted(data)
    k = (len(s) - 1) * p / 100
    f = int(k)
    return s[f] if f + 1 >= len(s) else s[f] + (k - f) * (s[f + 1] - s[f])


def _agentic(exported):
    _, out, points, _ = exported
    (pid, (env, _stem)), = [(pid, e) for pid, e in _exports(out).items()
                            if points[pid]["scenario_kind"] == "agentic"]
    art = out / env["RESULT_DIR"] / "aiperf_artifacts"
    lines = [json.loads(x) for x in (art / "profile_export.jsonl").read_text().splitlines()]
    return points[pid], env, art, lines


def _kept(lines: list[dict]) -> list[dict]:
    """request_metrics.py: warmup = a phase set and not "profiling"; errors dropped."""
    return [x for x in lines
            if x["metadata"].get("benchmark_phase", "profiling") == "profiling"
            and not x.get("error")]


def _value(x: dict, name: str) -> float:
    m = x["metrics"][name]
    return m["value"] if isinstance(m, dict) else m


def test_agentic_point_through_agentx_formulas(exported) -> None:
    p, _, _, lines = _agentic(exported)
    kept = _kept(lines)
    assert len(kept) == p["num_completed"] and len(kept) >= 2
    warm = [x for x in lines if x["metadata"]["benchmark_phase"] != "profiling"]
    assert warm and len(lines) - len(warm) == p["num_requests"]
    ttft = [v / 1000 for x in kept if (v := _value(x, "time_to_first_token")) > 0]
    assert _percentile(ttft, 50) == pytest.approx(p["median_ttft"], rel=1e-6)
    assert _percentile(ttft, 90) == pytest.approx(p["p90_ttft"], rel=1e-6)
    # extract_per_record_floats skips a record without the metric (AIPerf has no ITL for a
    # one-token reply: a 64x-scaled trace has some)
    itl = [v / 1000 for x in kept if "inter_token_latency" in x["metrics"]
           and (v := _value(x, "inter_token_latency")) > 0]
    assert 1 / _percentile(itl, 90) == pytest.approx(p["p90_intvty"], rel=1e-6)
    ratio = [_value(x, "request_latency") / 1000 / _value(x, "output_sequence_length")
             for x in kept if _value(x, "output_sequence_length") > 0]
    for q, key in ((50, "median_e2e_intvty"), (75, "p75_e2e_intvty"), (90, "p90_e2e_intvty")):
        assert 1 / _percentile(ratio, q) == pytest.approx(p[key], rel=1e-6), key
    assert statistics.pstdev(ttft) == pytest.approx(p["std_ttft"], rel=1e-6)


def test_agentic_throughput_per_gpu_through_agentx_formulas(exported) -> None:
    p, env, _, lines = _agentic(exported)
    kept = _kept(lines)
    tokens = sum(_value(x, "input_sequence_length") + _value(x, "output_sequence_length")
                 for x in kept)
    # compute_throughput_stats: the kept records' span; build_result: / TP x PP x PCP
    span = (max(x["metadata"]["request_end_ns"] for x in kept)
            - min(x["metadata"]["request_start_ns"] for x in kept)) / 1e9
    gpus = int(env["TP"]) * int(env["PP_SIZE"]) * int(env["PCP_SIZE"])
    assert tokens == p["total_input_tokens"] + p["total_output_tokens"]
    # the point as recorded: its measured window is upstream's span
    assert span == pytest.approx(p["duration_s"], rel=1e-9)
    assert tokens / span / gpus == pytest.approx(p["tput_per_gpu"], rel=1e-6)


def test_agentic_aggregate_and_server_metrics(exported) -> None:
    p, _, art, lines = _agentic(exported)
    agg = json.loads((art / "profile_export_aiperf.json").read_text())
    # request_metrics.py: theoretical hit = sum/count, else avg/100 for unit "%"
    hit = agg["theoretical_prefix_cache_hit"]
    assert hit["unit"] == "%" and hit["avg"] / 100 == pytest.approx(p["theoretical_hit_rate"])
    assert agg["metadata"]["submission_valid"] is p["valid"]
    assert agg["request_count"]["avg"] == len(_kept(lines))
    sm = json.loads((art / "server_metrics_export.json").read_text())["metrics"]

    def total(name: str) -> float:  # backends/vllm.py: sum over series, `total` first
        return sum(next(s["stats"][k] for k in ("total", "sum", "max", "avg")
                        if k in s["stats"]) for s in sm[name]["series"])

    assert sm["vllm:prompt_tokens"]["type"] == "counter"
    assert total("vllm:prompt_tokens") == p["server_prompt_tokens"]
    assert total("vllm:generation_tokens") == p["server_generation_tokens"]


def test_bad_inputs_are_one_line_errors(exported, tmp_path) -> None:
    run, _, _, _ = exported
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "points.jsonl").write_text("")
    (tmp_path / "afile").write_text("")
    cases = {str(tmp_path / "nope"): "no such directory",
             str(tmp_path): "not a run directory",
             str(tmp_path / "empty"): "no points"}
    for run_dir, why in cases.items():
        r = harness("export", "inferencex", run_dir, "--out", str(tmp_path / "o"))
        assert r.returncode == 2 and why in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = harness("export", "inferencex", str(run), "--out", str(tmp_path / "afile"))
    assert r.returncode == 2 and "not a directory" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_names_and_clashes() -> None:
    from harness.publish.exports.aiperf_server_metrics import split_key
    from harness.publish.exports.inferencex_fixed import result_filename, result_filenames
    from harness.record.point_record import PointIdentity, PointRecord
    from harness.record.validity import Validity

    def rec(**kw) -> PointRecord:
        i = PointIdentity(**{"model": "deepseek-r1", "precision": "fp8", "chip": "b200",
                             "engine": "trtllm", "scenario": "fixed-8k1k",
                             "scenario_kind": "fixed", "isl": 8192, "osl": 1024, "conc": 8,
                             "tp": 8, "ep": 8, "dp_attention": True, **kw})
        return PointRecord(i.point_id(), "r", i, "ok", Validity.legacy(True, ()))

    a, b = rec(), rec(spec_method="mtp", spec_k=3)
    assert result_filename(a) == "dsr1_8k1k_fp8_trt_tp8_ep8_dpa_true_conc8_b200"
    names = result_filenames([a, b])  # the template has no speculator: both get their id
    assert names[a.point_id] == f"{result_filename(a)}_{a.point_id}" != names[b.point_id]
    load, rest = b.point_id.split("-", 1)  # the speculator and k after the load
    assert names[b.point_id] == f"{result_filename(b)}_{load}-mtp-k3-{rest}"
    assert result_filenames([a])[a.point_id] == result_filename(a)
    assert split_key('vllm:x_total{model_name="m \\"q\\"",le="0.5"}') == \
        ("vllm:x_total", {"model_name": 'm "q"', "le": "0.5"})
    assert split_key("plain") == ("plain", {})


# docs/upstream/agentx.md §3.7: AIPerf's MetricRecordMetadata fields.
RECORD_METADATA = ("session_num", "x_request_id", "x_correlation_id", "conversation_id",
                   "turn_index", "source_trace_id", "source_outer_idx", "source_inner_idx",
                   "source_kind", "credit_issued_ns", "request_start_ns", "request_ack_ns",
                   "request_end_ns", "worker_id", "record_processor_id", "benchmark_phase",
                   "phase_index", "profiling_index", "phase_name", "phase_kind",
                   "was_cancelled", "cancellation_time_ns", "context_overflow_skip",
                   "agent_depth", "parent_correlation_id", "root_correlation_id")


def test_agentic_records_accounting_and_qps_through_agentx_formulas(exported) -> None:
    p, _, _, lines = _agentic(exported)
    assert not [k for x in lines for k in RECORD_METADATA if k not in x["metadata"]]
    # the ids each request sent as its session headers, through the requests Parquet
    metas = [x["metadata"] for x in lines]
    assert all(uuid.UUID(m["x_request_id"]) and uuid.UUID(m["x_correlation_id"]) for m in metas)
    assert all(m["root_correlation_id"] == m["x_correlation_id"] for m in metas
               if m["agent_depth"] == 0)
    # load_records_with_accounting: warmup = phase set and not profiling; error = truthy
    warm = [x for x in lines if x["metadata"].get("benchmark_phase", "profiling") != "profiling"]
    err = [x for x in lines if x.get("error")]
    kept = _kept(lines)
    cats: dict[str, int] = {}
    for x in err:
        cats[x["error"]["type"]] = cats.get(x["error"]["type"], 0) + 1
    assert (p["acct_records_total"], p["acct_records_profiled"], p["acct_warmup_dropped"],
            p["acct_error_dropped"], p["acct_dropped_total"]) == (
        len(lines), len(kept), len(warm), len(err), len(lines) - len(kept))
    assert p["acct_error_categories"] == cats
    # compute_qps_stats: full 1 s windows from the first end, counts left-closed
    ends = sorted(x["metadata"]["request_end_ns"] / 1e9 for x in kept)
    counts, t = [], ends[0]
    while t + 1.0 <= ends[-1]:
        counts.append(sum(1 for e in ends if t <= e < t + 1.0))
        t += 1.0
    assert p["qps_1s_windows"] == len(counts) >= 1
    assert p["mean_qps_1s"] == pytest.approx(statistics.mean(counts))
    assert p["p90_qps_1s"] == pytest.approx(_percentile(counts, 90))
    assert p["std_qps_1s"] == pytest.approx(statistics.pstdev(counts))
    # AgentX's p75/p95 of TTFT and E2EL, and its tokens and trajectory figures
    ttft = [_value(x, "time_to_first_token") / 1000 for x in kept]
    e2el = [_value(x, "request_latency") / 1000 for x in kept]
    assert _percentile(ttft, 95) == pytest.approx(p["p95_ttft"], rel=1e-6)
    assert _percentile(e2el, 75) == pytest.approx(p["p75_e2el"], rel=1e-6)
    osl = [_value(x, "output_sequence_length") for x in kept]
    assert _percentile(osl, 90) == pytest.approx(p["p90_output_tokens"])
    assert p["traj_root_count"] == len({x["metadata"]["source_trace_id"] for x in kept})


def test_agentic_server_metrics_have_one_second_timeslices(exported) -> None:
    _, _, art, _ = _agentic(exported)
    sm = json.loads((art / "server_metrics_export.json").read_text())["metrics"]
    counters = [s for m in sm.values() if m["type"] == "counter" for s in m["series"]]
    gauges = [s for m in sm.values() if m["type"] == "gauge" for s in m["series"]]
    assert counters  # the scripted server has no gauges: test_agentx_facts covers them
    for s in counters:
        sl = s["timeslices"]
        assert sum(x["total"] for x in sl) == pytest.approx(s["stats"]["total"], abs=1e-6)
        assert all(b["start_ns"] == a["end_ns"] for a, b in itertools.pairwise(sl))
        assert all(x["end_ns"] - x["start_ns"] == 1_000_000_000 for x in sl[:-1])
        assert all(x.get("is_complete", True) for x in sl[:-1])
    for s in gauges:
        for x in s["timeslices"]:
            assert x["min"] <= x["avg"] <= x["max"]
            assert s["stats"]["min"] <= x["min"] and x["max"] <= s["stats"]["max"]
