"""`harness sweep`'s last line for exits 4 and 5 (README, Exit codes), through the real CLI on
the scripted server attached as `engine=endpoint`."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from harness.testing.spawn import spawn_server
from tests.helpers import harness

SMALL = ["scenario.requests_per_conc=2", "scenario.warmup_per_conc=0", "concurrency=[1]"]


def test_every_point_failed_on_an_attached_engine_says_where_to_look_and_how_to_resume(
        tmp_path) -> None:
    with spawn_server("harness.testing.scripted_server", "--fail-every", "1") as port:
        r = harness("sweep", "engine=endpoint", f"engine.url=http://127.0.0.1:{port}", *SMALL,
                    f"results_dir={tmp_path}", "run_id=f", timeout=300)
    assert r.returncode == 5, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"harness: every point of {tmp_path / 'f'} failed (1)"), last
    assert "attached server's own logs" in last and "rerun with run_id=f" in last
    assert "the engine logs in" not in last  # nothing was launched: no log to point at
    assert not list((tmp_path / "f" / "servers").glob("*.log"))


@contextlib.contextmanager
def _read_only_mount(path: Path):
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here ({r.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


@pytest.mark.parametrize("below", ["", "sub/dir"])
def test_a_read_only_results_dir_from_the_start_exits_4(tmp_path, below) -> None:
    with _read_only_mount(tmp_path / "ro") as ro:
        results = ro / below if below else ro
        r = harness("sweep", "engine=endpoint", "engine.url=http://127.0.0.1:9", *SMALL,
                    f"results_dir={results}", "run_id=a", timeout=120)
        assert r.returncode == 4, r.stderr
        line, = r.stderr.strip().splitlines()
        assert line.startswith("harness sweep: cannot write results under ")
        assert str(ro) in line and "read-only file system" in line and "Fix:" in line
        assert "Traceback" not in r.stderr and not any(ro.iterdir())


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_a_directory_without_write_permission_exits_4(tmp_path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    r = harness("sweep", "engine=endpoint", "engine.url=http://127.0.0.1:9", *SMALL,
                f"results_dir={locked}", "run_id=a", timeout=120)
    assert r.returncode == 4, r.stderr
    assert "no write permission" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_bad_run_id_is_still_bad_input(tmp_path) -> None:
    r = harness("sweep", "engine=endpoint", "engine.url=http://127.0.0.1:9",
                f"results_dir={tmp_path}", "run_id=../x", timeout=120)
    assert r.returncode == 2 and "run_id" in r.stderr and "Traceback" not in r.stderr
