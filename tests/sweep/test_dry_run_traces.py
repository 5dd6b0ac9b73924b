"""`harness sweep --dry-run` refuses a missing or malformed trace as the sweep itself does:
exit 2, one line naming the file and field, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

AGENTIC = "scenarios=agentic-weka-cpu"
NAN_THINK = ('{"id": "t1", "block_size": 64, "requests": [{"t": 0, "in": 10, "out": 5, '
             '"hash_ids": [], "think_time": NaN}]}')


def _sweep(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep", *args,
                           f"results_dir={cwd / 'res'}"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _one_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    return lines[-1]


@pytest.mark.parametrize(("trace", "named"), [
    (None, "no such file"),
    (NAN_THINK, "field 'think_time': nan is not a finite number"),
], ids=["missing", "nan-think-time"])
def test_dry_run_refuses_a_bad_trace(tmp_path: Path, trace: str | None, named: str) -> None:
    if trace is not None:
        (tmp_path / "bad.json").write_text(trace)
    r = _sweep(tmp_path, "--dry-run", AGENTIC, "scenario.trace_files=[bad.json]")
    line = _one_line(r)
    assert [x for x in r.stderr.splitlines() if x.strip()] == [line]
    assert line.startswith("harness: bad trace in ") and "bad.json" in line, line
    assert named in line, line
    assert "Fix: " in line
    assert "composes and validates" not in r.stdout
    assert not (tmp_path / "res").exists()


def test_dry_run_and_the_sweep_give_the_same_refusal(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(NAN_THINK)
    args = (AGENTIC, "scenario.trace_files=[bad.json]")
    dry = _one_line(_sweep(tmp_path, "--dry-run", *args))
    real = _one_line(_sweep(tmp_path, *args))
    assert dry == real


def test_dry_run_still_passes_the_shipped_traces(tmp_path: Path) -> None:
    r = _sweep(tmp_path, "--dry-run", AGENTIC)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "the config composes and validates" in r.stdout
