"""The capitals eval (harness/evals/capitals.py) against the real embedded engine: SmolLM2-135M
passes its floor through `harness eval`, and the same engine with a wrong chat template, through
the same eval path, falls below it (docs/evals.md). So the floor of make run's eval can fail."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.engines.process import free_port
from harness.engines.weights import gguf_path
from harness.evals.capitals import names_capital, process_results
from harness.evals.tasks import data_for, floor_for

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "evals" / "capitals" / "test.jsonl"


def test_a_reply_counts_only_when_it_names_the_capital_as_a_word() -> None:
    assert names_capital("The capital of Peru is Lima.", ["Lima"])
    assert names_capital("KIEV", ["Kyiv", "Kiev"])
    assert names_capital("It is Washington, D.C.", ["Washington", "Washington, D.C."])
    assert not names_capital("The capital of Turkey is Istanbul.", ["Ankara"])
    assert not names_capital("Parisian cafes", ["Paris"])  # a word, not a prefix
    assert not names_capital("", ["Paris"])  # what a wrong chat template gives
    doc = {"aliases": ["Brasília", "Brasilia"]}
    assert process_results(doc, ["Brasilia."]) == {"answer_in_reply": 1.0}


def test_the_task_ships_its_data_and_a_floor_above_zero() -> None:
    rows = [json.loads(line) for line in DATA.read_text().splitlines()]
    assert len(rows) == 52 and all(r["capital"] in r["aliases"] for r in rows)
    assert data_for("capitals", "data/evals", "x", REPO).data_files == {"test": str(DATA)}
    with pytest.raises(ConfigError, match=r"(?s)eval\.data_dir.*no Hub copy"):
        data_for("capitals", None, "the eval recipe", REPO)
    floor, source = floor_for("capitals", {})
    assert floor > 0.5 and "docs/evals.md" in source
    sc = compose_sweep(["eval=capitals"])
    assert sc.eval.tasks == ["capitals"] and sc.eval.limit is None  # all 52 questions




def test_a_relative_data_dir_is_the_users_copy_else_the_shipped_one(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """Run from another directory: eval.data_dir=data/evals is the user's own copy where they
    have one, else the shipped questions; a directory in neither place names both."""
    monkeypatch.chdir(tmp_path)
    assert data_for("capitals", "data/evals", "x", REPO).data_files == {"test": str(DATA)}
    mine = tmp_path / "data" / "evals" / "capitals"
    mine.mkdir(parents=True)
    (mine / "test.jsonl").write_text(DATA.read_text().splitlines()[0] + "\n")
    assert data_for("capitals", "data/evals", "x", REPO).data_files == \
        {"test": str(mine / "test.jsonl")}
    with pytest.raises(ConfigError) as e:
        data_for("capitals", "my-evals", "the eval recipe", REPO)
    assert f"{tmp_path}/my-evals" in str(e.value) and f"{REPO}/my-evals" in str(e.value)
@contextlib.contextmanager
def embedded_server(params: dict[str, object]) -> Iterator[str]:
    """The embedded engine's own server process (as the harness launches it), with `params`
    set on its llama.cpp parameters (none: the healthy engine)."""
    port = free_port()
    cfg = {"model_path": str(gguf_path(compose_sweep(["run_id=unit"]).model)),
           "alias": "smollm2-135m", "port": port, "n_parallel": 4, "n_ctx": 2048,
           "host": "127.0.0.1", "params": params}
    # PASSIVE: the OpenMP threads sleep at barriers instead of spinning, so a test beside
    # other work does not collapse (recipes/engine/llamacpp.yaml, docs/host.md).
    proc = subprocess.Popen([sys.executable, "-m", "harness.engines.llamacpp_server",
                             json.dumps(cfg)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with (contextlib.suppress(OSError),
                  urllib.request.urlopen(f"{url}/health", timeout=2) as r):
                if r.status == 200:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, "engine did not start"
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _eval(tmp_path: Path, *overrides: str) -> tuple[int, dict]:
    from harness.cli.main import main

    out = tmp_path / "eval.json"
    rc = main(["eval", "eval=capitals", *overrides, "--out", str(out)])
    return rc, json.loads(out.read_text())[0]


# Both sides on the same server launch, one llama.cpp parameter apart, through the same CLI
# path (lm-eval, chat completions, greedy). `harness eval eval=capitals` with the engine launched
# by the harness scored the same 0.788 (docs/evals.md); it is not run here because on a busy
# 2-core host that launch took ~9 minutes (llama.cpp's spinning threads at nice 10).


@pytest.mark.slow  # the embedded engine answers 52 questions (~2 min on 2 busy cores)
def test_the_default_model_on_the_embedded_engine_passes_the_floor(tmp_path: Path) -> None:
    with embedded_server({}) as url:
        rc, r = _eval(tmp_path, "engine=endpoint", f"engine.url={url}", "eval.concurrency=4")
    assert r["n"] == 52 and r["floor"] > 0.5
    assert rc == 0 and r["passed"] and r["score"] >= r["floor"], r


@pytest.mark.slow
def test_a_wrong_chat_template_falls_below_the_floor(tmp_path: Path) -> None:
    # Llama-2's [INST] template on a ChatML model: the engine serves, answers every request,
    # and is wrong.
    with embedded_server({"chat_template": "llama2", "use_jinja": False}) as url:
        rc, r = _eval(tmp_path, "engine=endpoint", f"engine.url={url}", "eval.concurrency=4")
    assert r["n"] == 52
    assert rc == 1 and not r["passed"] and r["score"] < r["floor"], r
