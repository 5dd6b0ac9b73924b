"""The engine never outlives the harness, and a failed start shows its log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from harness.config.schema import GgufWeights
from harness.engines.llamacpp import LlamaCppAdapter
from harness.engines.process import EngineStartError
from harness.engines.session import EngineSession
from tests.config.test_config_errors import _compose
from tests.helpers import engine_pids, wait_for

pytestmark = pytest.mark.slow


def _sweep_config(**model_overrides):
    from harness.config.validate import to_sweep_config

    cfg, where = _compose([])
    sc = to_sweep_config(cfg, where)
    for k, v in model_overrides.items():
        setattr(sc.model, k, v)
    return sc


def test_failed_start_shows_the_log_tail(tmp_path) -> None:
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 64)
    sc = _sweep_config(gguf=GgufWeights(path=str(bogus)))
    session = EngineSession(LlamaCppAdapter(sc), tmp_path, "t", 1)
    with pytest.raises(EngineStartError) as ei:
        session.start()
    msg = str(ei.value)
    assert "exited with code" in msg and "last lines of" in msg
    assert "broken.gguf" in msg  # llama.cpp's own words about the file, from its log
    assert not engine_pids()


def _as_at_a_terminal() -> None:
    """A shell that starts the suite in the background hands its children SIGINT ignored
    (POSIX), and a Python started so rightly keeps ignoring it; Ctrl-C at a terminal is what
    this test models, so the harness starts with the default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("sig", "when"), [
    (signal.SIGINT, "starting"), (signal.SIGINT, "measuring"),
    (signal.SIGTERM, "measuring"), (signal.SIGKILL, "measuring")])
def test_no_server_survives_the_harness(tmp_path, sig, when) -> None:
    assert not engine_pids()
    out = tmp_path / "harness.out"
    with out.open("w") as sink:  # a file, not a pipe nobody reads (that could block it)
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli.main", "sweep", "concurrency=[1]",
             "scenario.requests_per_conc=50", f"results_dir={tmp_path}", "run_id=k"],
            stdout=sink, stderr=subprocess.STDOUT, preexec_fn=_as_at_a_terminal,
        )
    try:
        log = tmp_path / "k" / "servers" / "job0-fixed-128x64-llamacpp-none.log"
        wait_for(lambda: log.is_file() and engine_pids(), 120, "the engine to start")
        marker = "listening on" if when == "starting" else "prompt eval time"
        wait_for(lambda: marker in log.read_text(errors="replace"), 120, f"'{marker}'")
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the harness ignored signal {sig}:\n{out.read_text()[-3000:]}")
        wait_for(lambda: not engine_pids(), 30, "the engine to stop")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in engine_pids():
            os.kill(pid, signal.SIGKILL)
