"""In process: a YAML that will not load (one line, exit 2), the override that took
effect is the one quoted, a 200 that is not a stream says so, duplicate sub-agent ids are an
error, and a speculative label without evidence fails its point unless explicitly waived."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config.errors import ConfigError, YamlFileError
from harness.config.groups import check_yaml_files
from harness.config.locations import repo_root
from harness.publish.dashboards.page import hover_lines
from harness.record.validity import ValiditySettings, acceptance_rule, speculation_rule
from harness.workloads.traces import TraceError, load_traces
from tests.config.test_config_errors import _error
from tests.faults.test_replies import fetch
from tests.helpers import both_transports

# fetch reads test_replies' ClientSettings: the stream tests here run over both transports
transport = both_transports("tests.faults.test_replies", autouse=False)

PYTHON_TAG = "name: !!python/object/apply:os.system ['touch {marker}']\n"


# --- 4: a YAML that will not load --------------------------------------------------------------
def _tree(tmp_path: Path, scenario: str) -> Path:
    """A copy of the config tree's file layout (the YAML only) with scenarios/zz.yaml added."""
    for d in ("recipes", "scenarios"):
        for f in (repo_root() / d).rglob("*.yaml"):
            dst = tmp_path / f.relative_to(repo_root())
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(f.read_bytes())
    (tmp_path / "scenarios" / "zz.yaml").write_text(scenario)
    return tmp_path


@pytest.mark.parametrize(("text", "problem", "fix"), [
    (PYTHON_TAG, "could not determine a constructor for the tag "
                 "'tag:yaml.org,2002:python/object/apply:os.system' (line 1, column 7)",
     "remove the tag"),
    ("name: [a, b\n", "(line 2, column 1)", "correct the YAML at that line"),
    ("name: a\n\tb: 1\n", "found character '\\t' that cannot start any token (line 2, column 1)",
     "correct the YAML at that line"),
])
def test_a_yaml_that_will_not_load_is_one_line_naming_file_and_fix(tmp_path, text, problem,
                                                                    fix) -> None:
    root = _tree(tmp_path, text.format(marker=tmp_path / "ran"))
    with pytest.raises(YamlFileError) as ei:
        check_yaml_files(["scenarios=zz"], root)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("scenarios/zz.yaml does not load as YAML: ")
    assert problem in msg and f"fix: {fix}" in msg, msg
    check_yaml_files(["scenarios=fixed-1k1k"], root)  # files not chosen are not loaded


def test_the_sweep_command_prints_one_line_and_exits_2(tmp_path) -> None:
    marker = tmp_path / "ran"
    zz = repo_root() / "scenarios" / f"zz-{tmp_path.name}.yaml"
    zz.write_text(PYTHON_TAG.format(marker=marker))
    try:
        r = subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep",
                            f"scenarios={zz.stem}", f"results_dir={tmp_path}", "run_id=y"],
                           capture_output=True, text=True, timeout=300)
    finally:
        zz.unlink()
    assert r.returncode == 2, r.stderr[-3000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert lines[0].startswith(f"harness: scenarios/{zz.name} does not load as YAML:")
    assert "fix: remove the tag" in lines[0]
    assert not marker.exists() and not (tmp_path / "y").exists()


# --- 7: the override that took effect is quoted ------------------------------------------------
def test_a_key_given_twice_quotes_the_last_override() -> None:
    e = _error(["++scenario.requests_per_conc=2", "++scenario.requests_per_conc=0"])
    assert e.key == "scenario.requests_per_conc"
    assert e.where == "the command-line override 'scenario.requests_per_conc=0'", str(e)


def test_run_location_quotes_the_last_override_too(tmp_path) -> None:
    r = subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep", "run_id=good",
                        "run_id=../bad", f"results_dir={tmp_path}"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "override 'run_id=../bad'" in r.stderr, r.stderr[-2000:]


# --- 6: a 200 that is not a stream -------------------------------------------------------------
@pytest.mark.parametrize(("ctype", "body", "said"), [
    ("text/html; charset=utf-8", b"<html><body>Please log in</body></html>", "Please log in"),
    ("application/json", b'{"choices": [{"text": "hi"}]}', '"choices"'),
])
@pytest.mark.parametrize("strict", [False, True], ids=["fast", "strict"])
@pytest.mark.usefixtures("transport")
def test_a_200_that_is_not_a_stream_names_its_content_type(ctype, body, said, strict) -> None:
    rec = fetch([body], strict=strict, headers={"Content-Type": ctype})
    assert not rec.ok and rec.http_status == 200
    assert f"HTTP 200 with Content-Type {ctype}, expected text/event-stream" in rec.error
    assert said in rec.error and "[DONE]" not in rec.error, rec.error


@pytest.mark.usefixtures("transport")
def test_an_event_stream_with_parameters_is_still_a_stream() -> None:
    from tests.faults.test_replies import _stream

    rec = fetch(_stream(), headers={"Content-Type": "text/event-stream; charset=utf-8"})
    assert rec.ok, rec.error


# --- 9: duplicate sub-agent ids ----------------------------------------------------------------
def _req(t: float) -> dict:
    return {"t": t, "type": "n", "in": 64, "out": 8, "hash_ids": [1]}


def _sub(agent: str | None, t: float, *inner: dict) -> dict:
    s = {"t": t, "type": "subagent", "subagent_type": "x",
         "requests": list(inner) or [_req(t + 0.1)]}
    if agent is not None:
        s["agent_id"] = agent
    return s


@pytest.mark.parametrize(("items", "where"), [
    ([_req(0), _sub("agent_7", 1), _req(2), _sub("agent_7", 3)], "requests[3]"),
    ([_req(0), _sub("agent_1", 1, _req(1.1), _sub("agent_7", 1.2)), _sub("agent_7", 3)],
     "requests[2]"),
    ([_req(0), _sub(None, 1), _sub("sub1", 2)], "requests[2]"),
])
def test_duplicate_sub_agent_ids_name_the_trace_and_id(tmp_path, items, where) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"id": "tr-9", "block_size": 64, "requests": items}))
    with pytest.raises(TraceError) as ei:
        load_traces(f, "weka")
    msg = str(ei.value)
    assert "trace tr-9" in msg and where in msg and "used twice" in msg, msg
    assert ei.value.field_name == "agent_id"


def test_distinct_and_default_sub_agent_ids_load(tmp_path) -> None:
    f = tmp_path / "t.json"
    items = [_req(0), _sub(None, 1, _req(1.1), _sub(None, 1.2)), _sub(None, 2), _req(3)]
    f.write_text(json.dumps({"id": "ok", "block_size": 64, "requests": items}))
    (trace,) = load_traces(f, "weka")
    assert [i.agent_id for i in trace.items if hasattr(i, "agent_id")] == ["sub1", "sub2"]


# --- 3: a speculative label needs evidence -----------------------------------------------------
def test_a_speculative_label_without_a_realised_al_fails_its_point() -> None:
    (rule,) = speculation_rule("mtp", "real", 3, None, "no speculative counters", False)
    assert not rule.ok and rule.name == "speculation_observed"
    assert "mtp k=3 was never observed" in rule.reason and "unverified_ok" in rule.reason
    (rule,) = speculation_rule("mtp", "real", 3, 2.4, None, False)
    assert rule.ok
    assert speculation_rule("none", "none", 0, None, None, False) == []
    # injected points are judged by acceptance_realised, which fails without a realised AL
    assert speculation_rule("mtp", "injected", 3, None, None, False) == []
    assert not acceptance_rule("injected", 2.0, None, None, 3, ValiditySettings())[0].ok


def test_the_waiver_is_named_on_the_rule_and_the_page() -> None:
    (rule,) = speculation_rule("mtp", "real", 3, None, None, True)
    assert rule.ok and "waived by speculator.unverified_ok=true" in rule.message
    point = {"model": "m", "precision": "fp8", "chip": "h200", "engine": "endpoint",
             "scenario": "fixed-1k1k", "scenario_kind": "fixed", "conc": 1,
             "spec_method": "mtp", "spec_k": 3, "spec_unverified_ok": True}
    lines = hover_lines(point)
    assert any("UNVERIFIED" in x and "speculator.unverified_ok" in x for x in lines)


def test_unverified_ok_is_a_setting() -> None:
    e = _error(["++speculator.unverified_ok=maybe"])
    assert isinstance(e, ConfigError) and e.key == "speculator.unverified_ok"
