"""Results that cannot be lost: ids that collide or escape results/, two writers,
short and torn writes, a full or read-only disk mid-sweep, and resume after failures.

Sweeps here attach to the scripted server (`engine=endpoint`): no engine is launched, so none
can be left behind. The disk-full and read-only cases mount a small tmpfs (root only; skipped
otherwise, with the simulated cases below still covering the code path)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main as cli_main
from harness.config.errors import ConfigError
from harness.config.validate import to_sweep_config
from harness.record.results import ResultsWriteError, RunDir, read_points, read_points_counted
from harness.testing.spawn import spawn_server
from tests.config.test_config_errors import _compose
from tests.helpers import engine_pids, harness, wait_for

SMALL = ["scenario.requests_per_conc=3", "scenario.warmup_per_conc=1"]


@pytest.fixture(scope="module")
def fast_url():
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms", "1"
                      ) as port:
        yield f"http://127.0.0.1:{port}"


def _sweep_args(url: str, results: Path, run_id: str, conc: str = "[1,2]") -> list[str]:
    return ["sweep", "engine=endpoint", f"engine.url={url}", f"concurrency={conc}", *SMALL,
            f"results_dir={results}", f"run_id={run_id}"]


def _config_error(overrides: list[str]) -> ConfigError:
    cfg, where = _compose(overrides)
    with pytest.raises(ConfigError) as ei:
        to_sweep_config(cfg, where)
    return ei.value


def _assert_readable(run: Path) -> list[dict]:
    """Every line of points.jsonl parses, and every point has its requests on disk."""
    points, unreadable = read_points_counted(run)
    assert unreadable == 0
    for p in points:
        assert (run / "requests" / f"{p['point_id']}.parquet").is_file()
    return points


# --- ids ---------------------------------------------------------------------------------------
def test_duplicate_concurrency_is_a_config_error() -> None:
    e = _config_error(["++concurrency=[2,2]"])
    assert e.key == "concurrency" and "concurrency=[2,2]" in e.where
    assert "more than once" in e.problem and "repeats" in e.fix


@pytest.mark.parametrize("run_id", ["latest", "../../x", "/abs/x", "..", "", ".hidden",
                                    "a/b", "a b"])
def test_run_id_must_be_a_plain_name_checked_before_hydra_writes(tmp_path, capsys,
                                                                 run_id) -> None:
    results = tmp_path / "deep" / "results"
    prev = RunDir.open(results, "prev")
    prev.write_provenance(Path.cwd(), ["first"])
    os.symlink("prev", results / "latest")
    before = (prev.root / "run.json").read_bytes()
    if run_id.startswith("/"):
        run_id = str(tmp_path / "abs")
    assert cli_main(["sweep", f"results_dir={results}", f"run_id={run_id}"]) == 2
    err = capsys.readouterr().err
    assert "key run_id:" in err and f"run_id={run_id}" in err and "fix:" in err
    # nothing written anywhere: not beside results/, not through `latest`, not at /abs
    assert sorted(p.name for p in results.iterdir()) == ["latest", "prev"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep"]
    assert (prev.root / "run.json").read_bytes() == before
    assert os.readlink(results / "latest") == "prev"


def test_run_id_checked_by_the_validator_too() -> None:
    from harness.config.compose import compose_sweep

    with pytest.raises(ConfigError) as ei:  # calibrate and tools compose through it
        compose_sweep(["run_id=../up"])
    assert ei.value.key == "run_id" and "plain name" in ei.value.problem


def test_job_names_from_recipe_names_stay_inside_the_run(tmp_path, fast_url) -> None:
    r = harness(*_sweep_args(fast_url, tmp_path / "res", "j", "[1]"),
                "scenario.name=../../../evil")
    assert r.returncode == 0, r.stderr[-2000:]
    configs = list((tmp_path / "res" / "j" / "configs").iterdir())
    assert [c.name for c in configs] == ["job0-.._.._.._evil-endpoint-none.yaml"]
    assert not list(tmp_path.glob("evil*")) and not list(tmp_path.parent.glob("evil*"))
    assert RunDir(tmp_path / "res" / "j").server_log("../x").parent.name == "servers"


# --- one writer --------------------------------------------------------------------------------
def test_a_second_sweep_on_a_run_in_use_is_refused_naming_the_pid(tmp_path, fast_url) -> None:
    out = tmp_path / "a.out"
    with out.open("w") as sink:
        first = subprocess.Popen([sys.executable, "-m", "harness.cli.main",
                                  *_sweep_args(fast_url, tmp_path, "r", "[1,2,3,4,5,6]")],
                                 stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "run directory:" in out.read_text(), 60, "the first sweep's lock")
        second = harness(*_sweep_args(fast_url, tmp_path, "r", "[7]"))
        assert second.returncode == 2
        msg = second.stderr.strip()
        assert len(msg.splitlines()) == 1 and f"(PID {first.pid})" in msg, msg
        assert "another run_id" in msg and "Traceback" not in second.stderr
        assert first.wait(timeout=120) == 0, out.read_text()[-2000:]
    finally:
        if first.poll() is None:
            first.kill()
    prov = json.loads((tmp_path / "r" / "run.json").read_text())
    assert len(prov["invocations"]) == 1  # the refused sweep wrote nothing
    assert sorted(p["conc"] for p in _assert_readable(tmp_path / "r")) == [1, 2, 3, 4, 5, 6]


def test_the_lock_is_reentrant_within_a_process(tmp_path) -> None:
    run = RunDir.open(tmp_path, "r")
    run.lock()
    run.lock()  # a Hydra -m multirun: the next job in the same process
    assert (run.root / ".lock").read_text().strip() == str(os.getpid())


# --- short and torn writes ---------------------------------------------------------------------
def test_a_short_write_is_completed(tmp_path, monkeypatch) -> None:
    run = RunDir.open(tmp_path, "r")
    real_write = os.write

    def short(fd: int, data) -> int:  # the kernel may write less than asked
        return real_write(fd, bytes(data[: max(1, len(data) // 3)]))

    monkeypatch.setattr("harness.record.results.os.write", short)
    run.append_point({"point_id": "a", "status": "ok", "pad": "x" * 500})
    run.append_point({"point_id": "b", "status": "ok"})
    points, unreadable = read_points_counted(run.root)
    assert [p["point_id"] for p in points] == ["a", "b"] and unreadable == 0


def test_torn_lines_never_hide_the_points_after_them(tmp_path, caplog) -> None:
    run = RunDir.open(tmp_path, "r")
    run.append_point({"point_id": "a", "status": "ok"})
    with open(run.points_path, "ab") as f:
        f.write(b'{"point_id": "torn", "sta')  # a writer killed mid-line, no newline
    run.append_point({"point_id": "b", "status": "ok"})  # starts on a fresh line
    with open(run.points_path, "ab") as f:  # merged lines, as an unterminated write leaves
        f.write(b'{"point_id": "c", "status": "ok"}{"point_id": "d", "status": "ok"}\n')
        f.write(b'{"point_id": "e", "x": [1, {"point_id": "f", "status": "ok"}\n')
    with caplog.at_level(logging.WARNING, logger="harness"):
        points = read_points(run.root)
    assert {p["point_id"] for p in points} == {"a", "b", "c", "d", "f"}
    assert read_points_counted(run.root)[1] == 2  # 'torn' and 'e'
    assert "2 unreadable line(s) skipped" in caplog.text  # never silently


def test_disk_full_on_append_keeps_the_file_as_it_was(tmp_path, monkeypatch) -> None:
    """Simulated ENOSPC after part of the line went out: rolled back, one clear error."""
    run = RunDir.open(tmp_path, "r")
    run.write_requests("a", [])
    run.append_point({"point_id": "a", "status": "ok"})
    before = run.points_path.read_bytes()
    real_write, calls = os.write, []

    def full(fd: int, data) -> int:
        calls.append(1)
        if len(calls) == 1:
            return real_write(fd, bytes(data[:5]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("harness.record.results.os.write", full)
    with pytest.raises(ResultsWriteError) as ei:
        run.append_point({"point_id": "b", "status": "ok"})
    assert ei.value.path == run.points_path and ei.value.reason == "No space left on device"
    assert "rerun" in str(ei.value)
    assert run.points_path.read_bytes() == before
    assert run.completed_ids() == {"a"}  # b is measured again on resume


def test_resume_remeasures_failed_points(tmp_path) -> None:
    run = RunDir.open(tmp_path, "r")
    run.append_point({"point_id": "a", "status": "ok"})
    run.append_point({"point_id": "b", "status": "failed", "invalid_reasons": ["died"]})
    run.append_point({"point_id": "c", "status": "failed"})
    run.append_point({"point_id": "c", "status": "ok"})  # redone: the last line wins
    assert run.completed_ids() == {"a", "c"}


# --- a full or read-only disk mid-sweep --------------------------------------------------------
@pytest.fixture
def tiny_fs(tmp_path):
    d = tmp_path / "fs"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}); the simulated "
                    "ENOSPC test covers the write path")
    yield d
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _fill(d: Path) -> Path:
    filler = d / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    return filler


def _break_disk_mid_sweep(url: str, fs: Path, breaker) -> tuple[int, str]:
    out = fs.parent / "sweep.out"
    points = fs / "r" / "points.jsonl"
    with out.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli.main",
                                 *_sweep_args(url, fs, "r", "[1,2,3,4,5,6,7,8]")],
                                stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: points.is_file() and points.read_bytes().count(b"\n") >= 1, 60,
                 "a first point")
        breaker()
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return rc, out.read_text()


def _read_only_requests(fs: Path) -> Path:
    """Make the run's requests/ read-only under the running sweep: a read-only tmpfs mounted
    over it (remounting the whole file system read-only is refused while Hydra's job log is
    open on it; root ignores chmod)."""
    target = fs / "r" / "requests"
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(target)],
                   check=True)
    return target


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_disk_failing_mid_sweep_exits_4_keeping_what_was_measured(tiny_fs, fast_url,
                                                                  fault) -> None:
    undo: list = []
    if fault == "full":
        rc, out = _break_disk_mid_sweep(fast_url, tiny_fs,
                                        lambda: undo.append(_fill(tiny_fs).unlink))
        reason = "No space left on device"
    else:
        def make_read_only() -> None:
            target = _read_only_requests(tiny_fs)
            undo.append(lambda: subprocess.run(["umount", str(target)], check=True))

        rc, out = _break_disk_mid_sweep(fast_url, tiny_fs, make_read_only)
        reason = "Read-only file system"
    undo[0]()  # free the disk (or make it writable again) before reading back
    assert rc == 4, out[-3000:]
    assert "Traceback" not in out
    (line,) = [x for x in out.splitlines() if x.startswith("harness: cannot write")]
    kept = _assert_readable(tiny_fs / "r")
    assert 1 <= len(kept) < 8
    assert reason in line and "rerun with run_id=r to resume" in line
    assert f"{len(kept)} points are on disk" in line
    # resume: every point exactly once, the kept ones not redone
    r = harness(*_sweep_args(fast_url, tiny_fs, "r", "[1,2,3,4,5,6,7,8]"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"resuming: {len(kept)} of 8 points already complete" in r.stdout
    final = _assert_readable(tiny_fs / "r")
    assert sorted(p["conc"] for p in final) == list(range(1, 9))
    by_id = {p["point_id"]: p for p in final}
    assert all(by_id[p["point_id"]]["started_at"] == p["started_at"] for p in kept)
    assert not engine_pids()


def test_results_dir_a_file_or_read_only_is_a_config_error(tmp_path) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    e = _config_error([f"++results_dir={f}"])
    assert e.key == "results_dir" and "not a directory" in e.problem
    e = _config_error([f"++results_dir={f}/sub"])
    assert e.key == "results_dir" and "is a file" in e.problem
    r = harness("sweep", f"results_dir={f}", "run_id=r")  # before Hydra or an engine starts
    assert r.returncode == 2 and "key results_dir:" in r.stderr, r.stderr
    assert f.read_text() == "x"


def test_results_dir_read_only_is_a_config_error(tiny_fs) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_fs)], check=True)  # nothing open
    e = _config_error([f"++results_dir={tiny_fs}/results"])
    assert e.key == "results_dir" and "not writable" in e.problem


def test_an_unreadable_run_json_is_kept_aside_not_overwritten(tmp_path) -> None:
    run = RunDir.open(tmp_path, "r")
    (run.root / "run.json").write_bytes(b'{"invocations": [torn')
    prov = run.write_provenance(Path.cwd(), ["again"])
    assert [i["argv"] for i in prov["invocations"]] == [["again"]]
    (kept,) = run.root.glob("run.json.unreadable.*")
    assert kept.read_bytes() == b'{"invocations": [torn'
