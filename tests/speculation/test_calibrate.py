"""`harness calibrate`: prompts from SPEED-Bench through Hugging Face `datasets` (on local
copies: there is no network here), and real acceptance on the embedded engine whose rows equal
the engine's own counters over the run, read independently from the /metrics scrapes."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from harness.config.locations import repo_root
from harness.speculation.acceptance import load_table
from harness.speculation.speed_bench import SPEED_BENCH, DatasetSpec, load_conversations
from tests.helpers import harness

datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is not installed")

PLACEHOLDER = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH"
STUBS = [
    'def add(a: int, b: int) -> int:\n    """Return the sum of a and b."""\n',
    'def is_palindrome(s: str) -> bool:\n    """True when s reads the same both ways."""\n',
    'def fizzbuzz(n: int) -> list[str]:\n    """FizzBuzz from 1 to n."""\n',
]


def _rows():
    """SPEED-Bench's columns: three coding prompts, another category, and a placeholder row
    (the published dataset ships those where the source may not be redistributed)."""
    rows = [{"question_id": f"c{i}", "category": "coding", "sub_category": "python",
             "turns": [stub, "Now add tests."], "source": "humanevalpack", "src_id": str(i),
             "difficulty": "easy", "multiturn": True} for i, stub in enumerate(STUBS)]
    rows.insert(1, {**rows[0], "question_id": "m0", "category": "math", "turns": ["2+2?"]})
    rows.append({**rows[0], "question_id": "p0", "turns": [PLACEHOLDER]})
    return rows


@pytest.fixture
def saved_dataset(tmp_path):
    path = tmp_path / "speed-bench-copy"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(_rows())}).save_to_disk(str(path))
    return path


def test_speed_bench_loader_on_local_copies(tmp_path, saved_dataset) -> None:
    jsonl = tmp_path / "qualitative.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in _rows()))
    parquet = tmp_path / "qualitative.parquet"
    datasets.Dataset.from_list(_rows()).to_parquet(str(parquet))
    for source in (saved_dataset, jsonl, parquet):
        got = load_conversations(DatasetSpec(str(source)))
        # the coding category's first turns only, in order; the placeholder is not a prompt
        assert got.conversations == [[{"role": "user", "content": s}] for s in STUBS]
        assert got.skipped == 1 and "coding category: 3 prompts" in got.description
    assert len(load_conversations(DatasetSpec(str(jsonl), limit=2)).conversations) == 2
    every = load_conversations(DatasetSpec(str(jsonl), category=None))
    assert len(every.conversations) == 4 and "all categories" in every.description
    with pytest.raises(ValueError, match="no usable prompts"):
        load_conversations(DatasetSpec(str(jsonl), category="summarization"))


def test_the_hub_id_is_loaded_as_the_golden_curves_were(monkeypatch) -> None:
    calls = []

    def fake_load_dataset(*args, **kwargs):
        calls.append((args, kwargs))
        return datasets.Dataset.from_list(_rows())

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    got = load_conversations(DatasetSpec())
    assert calls == [((SPEED_BENCH, "qualitative"), {"split": "test"})]
    assert got.description.startswith(
        "SPEED-Bench (nvidia/SPEED-Bench qualitative/test), coding category: 3 prompts")


COUNTER = "llamacpp:spec_decode_num_{}_total"
PRINTED = re.compile(r"k=(\d) thinking off: AL ([\d.]+) = 1 \+ (\d+) accepted / (\d+) drafts")


def _calibrate(tmp_path, name, *args, ks=("1", "2")):
    work = tmp_path / f"work-{name}"
    r = harness("calibrate", "--k", *ks, "--max-tokens", "24", "--seed", "7",
                "--out", str(tmp_path / name / "calibrated.csv"), "--work-dir", str(work),
                *args, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return {x.k: x for x in load_table(tmp_path / name)}, work, r.stdout


def _counter_delta(scrape, what):
    return scrape["after"][COUNTER.format(what)] - scrape["before"][COUNTER.format(what)]


@pytest.mark.slow
def test_calibrated_rows_are_the_engines_counters_over_the_run(tmp_path) -> None:
    golden = tmp_path / "curve.yaml"
    rows, work, out = _calibrate(tmp_path, "a", "--turns", "2", "--context-tokens", "512",
                                 "--golden-yaml", str(golden))
    printed = {int(m[1]): m for m in PRINTED.finditer(out)}
    assert sorted(rows) == sorted(printed) == [1, 2]
    for k, row in rows.items():
        scrape = json.loads((work / "server_metrics" / f"calibrate-thinking-default-k{k}.json")
                            .read_text())
        accepted, drafts = _counter_delta(scrape, "accepted_tokens"), _counter_delta(
            scrape, "drafts")
        assert drafts > 0
        assert row.al == round(1 + accepted / drafts, 4)  # the counters, and nothing else
        assert (int(printed[k][3]), int(printed[k][4])) == (accepted, drafts)
        assert f"drafts={drafts:.0f} " in row.notes and f"accepted={accepted:.0f};" in row.notes
        assert (row.model, row.speculator, row.thinking) == ("smollm2-135m", "ngram", "off")
        assert row.engine.startswith("llamacpp xllamacpp") and row.measured_on
        assert row.source_kind.startswith("calibration") and row.calibrated
        assert "SWE-agent" in row.dataset and "output_len 24" in row.dataset
        assert row.sampling.startswith("temperature 1, seed 7+i")
    doc = yaml.safe_load(golden.read_text())
    assert doc == {"smollm2-135m": {"thinking_off": {k: round(r.al, 2) for k, r in rows.items()}}}
    header = golden.read_text().split("smollm2-135m:")[0]
    assert "# engine: llamacpp xllamacpp" in header and "# dataset: SWE-agent" in header


@pytest.mark.slow
def test_calibration_on_a_speed_bench_copy_with_a_real_drafter(tmp_path, saved_dataset) -> None:
    # k=2 alone: one launch per calibration; several k in one calibration are the test above's
    args = ("--dataset", str(saved_dataset), "--thinking", "off", "--speculator",
            "draft_model", "speculator.draft_model=self")
    first, work, _ = _calibrate(tmp_path, "a", *args, ks=("2",))
    second, _, _ = _calibrate(tmp_path, "b", *args, ks=("2",))
    assert sorted(first) == sorted(second) == [2]
    for k, row in first.items():
        scrape = json.loads((work / "server_metrics" / f"calibrate-thinking-off-k{k}.json")
                            .read_text())
        acc, drafts = _counter_delta(scrape, "accepted_tokens"), _counter_delta(scrape, "drafts")
        assert row.al == round(1 + acc / drafts, 4) and 1.0 < row.al <= k + 1
        assert row.dataset.startswith("speed-bench-copy (")
        assert "coding category: 3 prompts (1 placeholders skipped)" in row.dataset
        assert '"enable_thinking": false' in row.sampling
        assert second[k].al == row.al  # per-prompt seeds: the same draws again


def test_shipped_calibration_covers_k_1_to_8() -> None:
    rows = [r for r in load_table() if r.model == "smollm2-135m" and r.speculator == "ngram"]
    assert sorted(r.k for r in rows) == list(range(1, 9))
    assert all(r.source == "harness calibrate" and r.calibrated for r in rows)


VLLM_PY = repo_root() / ".venv-vllm" / "bin" / "python"


@pytest.mark.slow
@pytest.mark.skipif(not VLLM_PY.exists(), reason="vLLM on the CPU is not installed "
                                                  "(make vllm-env)")
def test_calibration_through_vllm_on_the_cpu(tmp_path) -> None:
    r = harness("calibrate", "--engine", "vllm-cpu", "--k", "2", "--turns", "1",
                "--context-tokens", "512", "--max-tokens", "32", "--out",
                str(tmp_path / "c" / "calibrated.csv"), "--work-dir", str(tmp_path / "w"),
                "precision=bf16", timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (row,) = load_table(tmp_path / "c")
    scrape = json.loads((tmp_path / "w" / "server_metrics" / "calibrate-thinking-default-k2.json")
                        .read_text())

    def delta(name):
        key = next(k for k in scrape["after"] if k.startswith(f"vllm:spec_decode_num_{name}"))
        return scrape["after"][key] - scrape["before"].get(key, 0.0)

    assert row.engine.startswith("vllm ") and row.al == round(
        1 + delta("accepted_tokens_total") / delta("drafts_total"), 4)


def test_sigterm_stops_a_calibration_with_a_request_in_flight(tmp_path) -> None:
    """SIGTERM mid-request: the engine and the command are gone within seconds (xllamacpp's
    server destructor alone used to hold a stop for ~15 s, so a SIGTERMed calibration took 18 s
    and was killed with -9), exit 143, and no engine is left behind."""
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import engine_pids, wait_for

    work = tmp_path / "work"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "calibrate", "--k", "4", "--max-tokens", "2048",
         "--turns", "1", "--context-tokens", "512", "--out", str(tmp_path / "c.csv"),
         "--work-dir", str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        log = work / "servers" / "calibrate-thinking-default-k4.log"
        wait_for(lambda: log.is_file() and "processing task" in log.read_text(), 300,
                 "a calibration request in flight")
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 128 + signal.SIGTERM, proc.stderr.read()[-2000:] if proc.stderr else ""
    assert took < 10, f"took {took:.1f} s to stop"
    assert engine_pids() == []
