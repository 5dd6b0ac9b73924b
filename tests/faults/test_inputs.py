"""Every bad input is an error before any work starts: settings out of range,
hostile traces, hostile InferenceX rows, and bad command-line arguments. Each error names the
file (or the command-line override), the key or field, and the fix."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.config.errors import ConfigError
from harness.config.validate import MAX_CONCURRENCY
from harness.publish.ingest import IngestError, ingest
from harness.record.results import read_points
from harness.workloads.traces import TraceError, load_traces
from tests.config.test_config_errors import _compose, validated
from tests.helpers import harness

ROWS = "scenarios/reference/dsr1_b200_rows.json"


def _error(override: str) -> ConfigError:
    cfg, where = _compose([f"++{override}"])
    with pytest.raises(ConfigError) as ei:
        validated(cfg, where)
    return ei.value


# --- settings ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("override", "key", "problem"), [
    ("concurrency=[a,b]", "concurrency[0]", "could not be converted"),
    (f"concurrency=[{MAX_CONCURRENCY + 1}]", "concurrency", "integers in [1, 4096]"),
    ("concurrency=[100000]", "concurrency", "integers in [1, 4096]"),
    ("concurrency=[0]", "concurrency", "integers in [1, 4096]"),
    ("concurrency=[]", "concurrency", "non-empty"),
    ("concurrency=[4096,4095,4094,4093,4092,4091]", "concurrency", "requests would be built"),
    ("seed=-1", "seed", "below 0"),
    ("repeats=0", "repeats", "below 1"),
    ("repeats=100000", "repeats", "above the limit of 100"),
    ("client.timeout_s=-1", "client.timeout_s", "not above 0"),
    ("client.timeout_s=nan", "client.timeout_s", "not a finite number"),
    ("client.stall_timeout_s=0", "client.stall_timeout_s", "not above 0"),
    ("client.max_cpu_share=1.5", "client.max_cpu_share", "above the limit of 1"),
    ("scenario.requests_per_conc=0", "scenario.requests_per_conc", "below 1"),
    ("scenario.warmup_per_conc=-2", "scenario.warmup_per_conc", "below 0"),
    ("scenario.duration_s=0", "scenario.duration_s", "not above 0"),
    ("scenario.duration_s=inf", "scenario.duration_s", "not a finite number"),
    ("scenario.min_measured_s=-5", "scenario.min_measured_s", "below 0"),
    ("scenario.min_success=1.2", "scenario.min_success", "above the limit of 1"),
    ("scenario.max_failed_share=-0.1", "scenario.max_failed_share", "below 0"),
    ("scenario.max_overflow_share=2", "scenario.max_overflow_share", "above the limit of 1"),
    ("scenario.idle_cap_s=-1", "scenario.idle_cap_s", "below 0"),
    ("scenario.tree_cap_s=-1", "scenario.tree_cap_s", "below 0"),
    ("scenario.fit_factor=0", "scenario.fit_factor", "below 1"),
    ("scenario.range_ratio=nan", "scenario.range_ratio", "(0, 1]"),
    ("engine.startup_timeout_s=0", "engine.startup_timeout_s", "not above 0"),
    ("speculator.acceptance.confidence=1.5", "speculator.acceptance.confidence",
     "above the limit of 1"),
    ("topology.tp=0", "topology.tp", "must be >= 1"),
    ("topology.pp=-1", "topology.pp", "must be >= 1"),
    ("client.transport=curl", "client.transport", "unknown transport 'curl'"),
    ("client.read_path=rust", "client.read_path", "unknown read path 'rust'"),
    ("client.agentic_workers=threads", "client.agentic_workers", "unknown split 'threads'"),
])
def test_setting_out_of_range_names_the_override_key_and_fix(override, key, problem) -> None:
    e = _error(override)
    assert e.key == key, str(e)
    assert e.where == f"the command-line override '{override}'", str(e)
    assert problem in e.problem, str(e)
    assert e.fix


def test_engine_kinds_come_from_the_adapter_registry() -> None:
    from harness.engines.registry import _ADAPTERS, engine_kinds

    assert engine_kinds() == tuple(_ADAPTERS)
    e = _error("engine.kind=tpu-serve")
    assert e.key == "engine.kind" and all(k in e.fix for k in _ADAPTERS)


# --- traces ------------------------------------------------------------------------------------
def _weka(requests, **top) -> dict:
    return {"id": "t1", "block_size": 64, "requests": requests, **top}


def _req(**kw) -> dict:
    return {"t": 0, "type": "n", "in": 100, "out": 10, "hash_ids": [1, 2], **kw}


def _nested(depth: int) -> dict:
    node: dict = _req()
    for i in range(depth):
        node = {"t": 0, "type": "subagent", "agent_id": f"a{i}", "requests": [node]}
    return _weka([_req(), node])


@pytest.mark.parametrize(("name", "text", "where", "field"), [
    ("nan-tokens", '{"id": "t1", "block_size": 64, "requests": [{"t": 0, "in": NaN, '
     '"out": 5, "hash_ids": []}]}', "trace t1, requests[0]", "in"),
    ("inf-tokens", '{"id": "t1", "block_size": 64, "requests": [{"t": 0, "in": 10, '
     '"out": Infinity, "hash_ids": []}]}', "requests[0]", "out"),
    ("nan-t", '{"id": "t1", "block_size": 64, "requests": [{"t": NaN, "in": 10, '
     '"out": 5, "hash_ids": []}]}', "requests[0]", "t"),
    ("nan-think", '{"id": "t1", "block_size": 64, "requests": [{"t": 0, "in": 10, '
     '"out": 5, "hash_ids": [], "think_time": NaN}]}', "requests[0]", "think_time"),
    ("negative-t", json.dumps(_weka([_req(t=-3)])), "requests[0]", "t"),
    ("negative-think", json.dumps(_weka([_req(think_time=-1)])), "requests[0]", "think_time"),
    ("negative-in", json.dumps(_weka([_req(**{"in": -10})])), "requests[0]", "in"),
    ("empty", json.dumps(_weka([])), "trace t1", "requests"),
    ("empty-subagent", json.dumps(_weka([_req(), {"t": 1, "type": "subagent",
                                                  "requests": []}])), "requests[1]",
     "requests"),
    ("no-parent", json.dumps(_weka([{"t": 0, "type": "subagent", "agent_id": "s",
                                     "requests": [_req()]}])), "trace t1", "requests"),
    ("deep-3000", None, "whole file", "(json)"),  # built in the test: json.dumps would overflow
    ("deep-40", json.dumps(_nested(40)), "requests[1]", "requests"),
])
def test_hostile_weka_trace_is_a_trace_error(tmp_path, name, text, where, field) -> None:
    path = tmp_path / f"{name}.json"
    if text is None:  # 3,000 levels: json.dumps itself would recurse too deep, so by hand
        inner = json.dumps(_req())
        head = '{"t": 0, "type": "subagent", "requests": ['
        text = json.dumps(_weka([_req()]))[:-2] + ", " + head * 3000 + inner + "]}" * 3000 \
            + "]}"
    path.write_text(text)
    with pytest.raises(TraceError) as ei:
        load_traces(path)
    msg = str(ei.value)
    assert str(path) in msg and where in msg and f"field '{field}'" in msg and "Fix:" in msg


@pytest.mark.parametrize("fmt", ["weka", "mooncake", "azure"])
def test_non_utf8_trace_names_the_line_and_byte(tmp_path, fmt) -> None:
    good = {"weka": json.dumps(_weka([_req()])) + "\n",
            "mooncake": '{"timestamp": 0, "input_length": 5, "output_length": 2, '
                        '"hash_ids": [1]}\n',
            "azure": "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,374,44\n"}[fmt]
    path = tmp_path / ("t.csv" if fmt == "azure" else "t.jsonl")
    path.write_bytes(good.encode() + b"\xff\xfe bad \x80\n")
    with pytest.raises(TraceError) as ei:
        load_traces(path, fmt)
    msg = str(ei.value)
    assert f"line {good.count(chr(10)) + 1}" in msg and "(encoding)" in msg
    assert "not UTF-8" in msg and "save the trace as UTF-8" in msg


@pytest.mark.parametrize(("fmt", "row", "field"), [
    ("mooncake", '{"timestamp": NaN, "input_length": 5, "output_length": 2, "hash_ids": []}',
     "timestamp"),
    ("mooncake", '{"timestamp": 0, "input_length": -5, "output_length": 2, "hash_ids": []}',
     "input_length"),
    ("azure", "2023-11-16 18:15:46.6805900,nan,44", "ContextTokens"),
    ("azure", "2023-11-16 18:15:46.6805900,10,-4", "GeneratedTokens"),
    ("azure", "2023-11-16 18:15:40.0,10,4", "TIMESTAMP"),  # before the first row: t < 0
])
def test_hostile_mooncake_and_azure_rows(tmp_path, fmt, row, field) -> None:
    if fmt == "azure":
        path = tmp_path / "t.csv"
        path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        f"2023-11-16 18:15:46.6805900,374,44\n{row}\n")
        line = "line 3"
    else:
        path = tmp_path / "t.jsonl"
        path.write_text(row + "\n")
        line = "line 1"
    with pytest.raises(TraceError) as ei:
        load_traces(path, fmt)
    assert line in str(ei.value) and f"field '{field}'" in str(ei.value)


# --- InferenceX rows ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def row() -> dict:
    with open(ROWS) as f:
        return json.load(f)[0]


def _hostile(row: dict) -> dict[str, tuple[bytes, str]]:
    """Six hostile files, each with the words its one-line error must contain."""
    def rows(*rs) -> bytes:
        return json.dumps(list(rs)).encode()

    return {
        "traversal": (rows(row, {**row, "hardware": "../../scenarios/fixed-1k1k"}),
                      "row 1: unknown hardware '../../scenarios/fixed-1k1k'"),
        "types": (rows({**row, "conc": "many"}), "row 0: 'conc' must be a positive integer"),
        "zero": (rows({**row, "isl": 0}), "row 0: 'isl' must be a positive integer"),
        "nan": (json.dumps([{**row, "metrics": {**row["metrics"], "p99_ttft": math.nan}}]
                           ).encode(), "row 0: metrics.p99_ttft is nan, not a finite number"),
        "not-a-row": (rows(row, row, 7), "row 2: expected an object, got int"),
        "not-utf8": (b"[\xff\xfe]", "cannot read JSON rows"),
    }


@pytest.mark.parametrize("case", ["traversal", "types", "zero", "nan", "not-a-row",
                                  "not-utf8"])
def test_hostile_rows_are_a_one_line_ingest_error(tmp_path, row, case) -> None:
    data, words = _hostile(row)[case]
    path = tmp_path / "rows.json"
    path.write_bytes(data)
    with pytest.raises(IngestError) as ei:
        ingest(path, tmp_path / "out")
    msg = str(ei.value)
    assert words in msg and "\n" not in msg and str(path) in msg
    assert not (tmp_path / "out").exists()  # every row is checked before anything is written


def test_metrics_cannot_override_the_identity(tmp_path, row) -> None:
    path = tmp_path / "rows.json"
    evil = {**row["metrics"], "valid": False, "conc": 99999, "gpus": 0, "status": "failed",
            "point_id": "x", "chip": "mi300x", "isl": 1}
    path.write_text(json.dumps([{**row, "metrics": evil}]))
    (p,) = ingest(path, tmp_path / "out")
    assert (p["conc"], p["gpus"], p["valid"], p["status"]) == (row["conc"], 8, True, "ok")
    assert (p["chip"], p["isl"]) == (row["hardware"], row["isl"])
    assert p["point_id"].startswith(f"c{row['conc']}-ix-")
    assert p["tput_per_gpu"] == row["metrics"]["tput_per_gpu"]  # metrics still copied
    assert read_points(tmp_path / "out") == [p]


def test_ingest_cli_hostile_file_is_one_line_exit_2(tmp_path, row) -> None:
    path = tmp_path / "rows.json"
    path.write_bytes(_hostile(row)["traversal"][0])
    r = harness("ingest-inferencex", str(path), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "unknown hardware" in r.stderr
    r = harness("ingest-inferencex", ROWS, "--out", str(tmp_path / "latest"))
    assert r.returncode == 2 and "reserved" in r.stderr and "Traceback" not in r.stderr


# --- command line ------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "words"), [
    (("table", "{file}", "--targets", "20"), "{file}"),
    (("table", "{missing}", "--targets", "20"), "{missing}"),
    (("gate", "--baseline", "{file}", "--candidate", "{file}"), "{file}"),
    (("dashboard", "{file}", "--out", "{dir}/d.html"), "{file}"),
    (("dashboard", "{run}", "--out", "{file}/d.html"), "{file}/d.html"),
    (("traces", "stats", "{missing}"), "no such file"),
    (("traces", "stats", "{dir}"), "no such file"),
    (("baseline", "{file}", "--to", "{dir}/b"), "no points.jsonl"),
    (("ingest-inferencex", "{missing}", "--out", "{dir}/o"), "cannot read JSON rows"),
])
def test_bad_cli_argument_is_one_line_with_no_traceback(tmp_path, args, words) -> None:
    names = {"file": str(tmp_path / "afile"), "missing": str(tmp_path / "missing"),
             "dir": str(tmp_path), "run": str(tmp_path / "run")}
    Path(names["file"]).write_text("not a run directory\n")
    if "{run}" in args:
        ingest(Path(ROWS), tmp_path / "run")
    r = harness(*(a.format(**names) for a in args), timeout=120)
    assert r.returncode == 2, r.stdout[-1000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness"), r.stderr
    assert words.format(**names) in lines[0]
