"""The AgentX corpus by name (docs/corpus.md): local copies of the corpus's layout built from
the shipped Weka traces, read through `datasets` (streaming), equal the traces loaded from the
JSON files; bad rows name the dataset, the row, the trace, the field and the fix."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.config.errors import ConfigError
from harness.config.schema import DatasetConfig, ScenarioConfig
from harness.workloads.traces import Trace, TraceError, load_traces, scenario_traces
from harness.workloads.traces.corpus import iter_traces, load_corpus, resolve, select
from harness.workloads.traces.corpus_stats import streaming_stats
from harness.workloads.traces.stats import trace_stats

WEKA = Path("scenarios/traces/weka-cc-traces")
NAMES = ("trace_0026", "trace_0277")
DATASET_ID = "semianalysisai/cc-traces-weka-062126"


def _rows() -> list[dict[str, Any]]:
    return [json.loads((WEKA / f"{n}.json").read_text()) for n in NAMES]


def _jsonl(d: Path, rows: list[Any]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "traces.jsonl").write_text("".join(
        (r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return d


def _plain(obj: Any) -> Any:
    """A trace as plain data, where it came from left out."""
    if dataclasses.is_dataclass(obj):
        d = dataclasses.asdict(obj)
        d.pop("source", None)
        d.pop("meta", None)
        return d
    return obj


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict[str, Path]:
    """The corpus's layouts: traces.jsonl beside the card and plots (as `hf download` leaves
    it); Parquet with Arrow's null-filled request structs (Hub conversion, split directory); and
    Parquet with each request a JSON string; and the id's snapshot in a Hub cache."""
    base = tmp_path_factory.mktemp("corpus")
    rows = _rows()
    jsonl = _jsonl(base / "jsonl", rows)
    (jsonl / "README.md").write_text("---\nconfigs: [{config_name: default}]\n---\n")
    (jsonl / "plots").mkdir()
    (jsonl / "plots" / "distributions_log.png").write_bytes(b"\x89PNG")
    structs = base / "parquet" / "default" / "train"
    structs.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), structs / "0000.parquet")
    strings = base / "parquet-json"
    strings.mkdir()
    table = pa.Table.from_pylist([{**r, "requests": [orjson.dumps(q).decode()
                                                     for q in r["requests"]]} for r in rows])
    pq.write_table(table, strings / "train-00000-of-00001.parquet")
    repo = base / "hub" / f"datasets--{DATASET_ID.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    _jsonl(repo / "snapshots" / ("0" * 40), rows)
    return {"jsonl": jsonl, "parquet": base / "parquet", "parquet-json": strings,
            "hub": base / "hub"}


@pytest.fixture(scope="module")
def shipped() -> list[Trace]:
    return [t for n in NAMES for t in load_traces(WEKA / f"{n}.json")]


@pytest.mark.parametrize("layout", ["jsonl", "parquet", "parquet-json"])
def test_a_local_copy_loads_as_the_json_files_do(layouts, shipped, layout) -> None:
    traces = load_corpus(DatasetConfig(local_dir=str(layouts[layout])), Path("."), "t")
    assert [_plain(t) for t in traces] == [_plain(t) for t in shipped]
    assert [t.meta["row"] for t in traces] == [0, 1]
    assert traces[1].meta["dataset"] == str(layouts[layout])
    assert len(traces[1].requests()) == 53 and len(traces[1].subagents()) == 4


def test_a_dataset_id_loads_from_the_hub_cache_offline(layouts, shipped, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = DatasetConfig(id=DATASET_ID, cache_dir=str(layouts["hub"]))
    traces = load_corpus(cfg, Path("."), "t")
    assert [_plain(t) for t in traces] == [_plain(t) for t in shipped]
    assert traces[0].source == DATASET_ID == traces[0].meta["dataset"]
    assert traces[0].meta["dataset_revision"] == "0" * 40  # the snapshot's commit
    with pytest.raises(ConfigError) as ei:  # not downloaded: no network call, a clear fix
        load_corpus(DatasetConfig(id=f"{DATASET_ID}-256k", cache_dir=str(layouts["hub"])),
                    Path("."), "scenarios/agentic-agentx-256k.yaml")
    msg = str(ei.value)
    assert "scenario.dataset.id" in msg and "offline" in msg
    assert f"hf download --repo-type dataset {DATASET_ID}-256k" in msg


def test_hashes_are_shared_int_objects_within_a_trace(layouts) -> None:
    tr = load_corpus(DatasetConfig(local_dir=str(layouts["jsonl"])), Path("."), "t")[1]
    a, b = tr.parent_requests()[0].hash_ids, tr.parent_requests()[1].hash_ids
    shared = [(x, y) for x, y in zip(a, b, strict=False) if x == y and x > 256]
    assert shared and all(x is y for x, y in shared)


def test_filter_then_cap_keeps_the_first_eligible_traces(tmp_path, layouts) -> None:
    rows = _rows()[::-1]  # trace_0277 (longest request 92,973 tokens) first
    d = _jsonl(tmp_path / "c", rows)
    src = resolve(DatasetConfig(local_dir=str(d)), Path("."), "t")
    assert [t.id for t in select(iter_traces(src), max_entries=1)] == ["trace_0277"]
    picked = select(iter_traces(src), max_entries=1, max_context_tokens=60_000)
    assert [t.id for t in picked] == ["trace_0026"]  # AIPerf: filter first, then cap
    cfg = DatasetConfig(local_dir=str(d), max_entries=1, max_context_tokens=60_000)
    assert [t.id for t in load_corpus(cfg, Path("."), "t")] == ["trace_0026"]
    with pytest.raises(ConfigError) as ei:
        load_corpus(DatasetConfig(local_dir=str(d), max_context_tokens=100), Path("."), "t")
    assert ei.value.key == "scenario.dataset.max_context_tokens"
    bad = _jsonl(tmp_path / "late", [*rows, {**rows[0], "extra": 1}])
    with pytest.raises(TraceError, match="row 2"):  # every row validated, as AIPerf preflights
        load_corpus(DatasetConfig(local_dir=str(bad), max_entries=1), Path("."), "t")


def test_streamed_statistics_equal_those_of_the_loaded_traces(layouts, shipped) -> None:
    src = resolve(DatasetConfig(local_dir=str(layouts["parquet"])), Path("."), "t")
    acc = streaming_stats(iter_traces(src))
    assert acc.result() == trace_stats(shipped)
    assert acc.longest == max(r.in_tokens + r.out_tokens for t in shipped for r in t.requests())


def _with(path: list[Any], key: str, value: Any, drop: bool = False) -> dict[str, Any]:
    row = _rows()[1]
    obj: Any = row
    for p in path:
        obj = obj[p]
    if drop:
        del obj[key]
    else:
        obj[key] = value
    return row


BAD_ROWS = {  # what is wrong -> (row 1, the field the error names, a word of the problem)
    "an unknown trace field": (_with([], "source_file", "x.json"), "source_file", "not a field"),
    "an unknown request field": (_with(["requests", 0], "cache_hit", 1), "cache_hit", "request"),
    "a sub-agent without status": (_with(["requests", 2], "status", None, drop=True), "status",
                                   "missing"),
    "a global hash id scope": (_with([], "hash_id_scope", "global"), "hash_id_scope", "local"),
    "a request without model": (_with(["requests", 2, "requests", 1], "model", None, drop=True),
                                "model", "missing"),
    "a bad hash id": (_with(["requests", 0], "hash_ids", [1, "x"]), "hash_ids", "integers"),
    "a sub-agent in a sub-agent": (_with(["requests", 2, "requests", 0], "type", "subagent"),
                                   "type", "unknown type"),
}


@pytest.mark.parametrize("what", sorted(BAD_ROWS))
def test_a_bad_row_names_dataset_row_trace_and_field(tmp_path, what) -> None:
    row, field, problem = BAD_ROWS[what]
    d = _jsonl(tmp_path / "bad", [_rows()[0], row])
    with pytest.raises(TraceError) as ei:
        load_corpus(DatasetConfig(local_dir=str(d)), Path("."), "t")
    msg = str(ei.value)
    assert ei.value.path == str(d) and ei.value.field_name == field, msg
    assert "row 1 (line 2 of traces.jsonl)" in msg and "trace_0277" in msg, msg
    assert problem in msg and "Fix:" in msg, msg


def test_lenient_accepts_fields_outside_the_schema(tmp_path) -> None:
    d = _jsonl(tmp_path / "extra", [BAD_ROWS["an unknown trace field"][0]])
    assert [t.id for t in load_corpus(DatasetConfig(local_dir=str(d), strict=False),
                                      Path("."), "t")] == ["trace_0277"]


@pytest.mark.parametrize("lines,field", [
    (["{\"id\": \"a\", ", None], "(json)"),
    (["[1, 2]"], "(trace)"),
    ([None, None], "id"),  # the same trace twice
])
def test_unreadable_rows_and_duplicates(tmp_path, lines, field) -> None:
    rows = [_rows()[0] if x is None else x for x in lines]
    d = _jsonl(tmp_path / "rows", rows)
    with pytest.raises(TraceError) as ei:
        load_corpus(DatasetConfig(local_dir=str(d)), Path("."), "t")
    assert ei.value.field_name == field and str(d) in str(ei.value)


def test_missing_copy_split_and_files_are_config_errors(tmp_path, layouts) -> None:
    cases = [(DatasetConfig(local_dir=str(tmp_path / "nope")), "scenario.dataset.local_dir"),
             (DatasetConfig(local_dir=str(layouts["jsonl"]), split="test"),
              "scenario.dataset.split"),
             (DatasetConfig(local_dir=str(layouts["jsonl"]), data_files=["*.csv"]),
              "scenario.dataset.data_files"),
             (DatasetConfig(local_dir=str(layouts["jsonl"]), data_files=["README.md"]),
              "scenario.dataset.data_files"),
             (DatasetConfig(), "scenario.dataset")]
    for cfg, key in cases:
        with pytest.raises(ConfigError) as ei:
            resolve(cfg, Path("."), "scenarios/x.yaml")
        assert ei.value.key == key, (cfg, str(ei.value))


def test_a_scenario_takes_a_dataset_or_trace_files_never_both(layouts) -> None:
    scen = ScenarioConfig(name="x", kind="agentic",
                          dataset=DatasetConfig(id=DATASET_ID, local_dir=str(layouts["jsonl"])))
    traces = scenario_traces(scen, Path("."), "t")  # the local copy of that id
    assert [t.id for t in traces] == list(NAMES) and traces[0].source == DATASET_ID
    both = dataclasses.replace(scen, trace_files=[str(WEKA / "trace_0026.json")])
    with pytest.raises(ConfigError) as ei:
        scenario_traces(both, Path("."), "t")
    assert "both scenario.trace_files and scenario.dataset" in ei.value.problem
    with pytest.raises(ConfigError, match="names no traces"):
        scenario_traces(ScenarioConfig(name="x", kind="agentic"), Path("."), "t")


def test_traces_stats_reads_a_dataset_directory(layouts, capsys) -> None:
    from harness.cli.traces import traces_command

    assert traces_command(["stats", str(layouts["jsonl"]), "--max-entries", "1"]) == 0
    out = capsys.readouterr().out
    assert "sessions 1, requests 3, sub-agents 0" in out and "1 jsonl file(s)" in out
    assert traces_command(["stats", str(layouts["parquet"])]) == 0
    out = capsys.readouterr().out
    assert "sessions 2, requests 56, sub-agents 4" in out and "longest request 92,973" in out


def test_a_parquet_stream_left_early_exits_cleanly(layouts) -> None:
    """Stopping a Parquet stream before its end (max_entries) must not abort the interpreter
    at exit (huggingface/datasets#7566: Arrow reader threads outliving Arrow)."""
    code = ("from pathlib import Path; from harness.config.schema import DatasetConfig; "
            "from harness.workloads.traces.corpus import iter_traces, resolve, select; "
            f"src = resolve(DatasetConfig(local_dir={str(layouts['parquet'])!r}), Path(), 't'); "
            "print(len(list(select(iter_traces(src), max_entries=1))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert (r.returncode, r.stdout.strip()) == (0, "1"), r.stderr[-2000:]


@pytest.mark.parametrize("name,dataset_id", [("agentic-agentx", DATASET_ID),
                                             ("agentic-agentx-256k", f"{DATASET_ID}-256k")])
def test_agentx_scenarios_name_the_corpus_and_replay_a_local_copy(layouts, name,
                                                                  dataset_id) -> None:
    from harness.config.compose import compose_sweep
    from harness.workloads.agentic_lanes import load_fitted

    sc = compose_sweep([f"scenarios={name}", f"scenario.dataset.local_dir={layouts['jsonl']}"])
    ds = sc.scenario.dataset
    assert (ds.id, ds.max_entries, ds.split, sc.scenario.duration_s) == (dataset_id, 393,
                                                                          "train", 3600)
    traces, fit = load_fitted(sc.scenario, Path("."), f"scenarios/{name}.yaml")
    assert [t.id for t in traces] == list(NAMES) and fit.mode == "none"
    assert traces[0].meta["dataset"] == dataset_id
