"""Exit codes and the points file at the end of a sweep, on the
scripted server (`engine=endpoint`): SIGTERM exits 143 with the "points kept" line; a sweep
whose every point failed exits 5; a resumed run rewrites points.jsonl so each point appears
once; an attached "mtp" point whose server shows no speculation is invalid unless waived."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.results import read_points
from harness.testing.spawn import spawn_server
from tests.faults.test_signals import INTERRUPTED, _lines
from tests.helpers import harness, wait_for

SMALL = ["scenario.requests_per_conc=2", "scenario.warmup_per_conc=0"]


@pytest.fixture(scope="module")
def url():
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5", "--itl-ms", "1"
                      ) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def failing_url():
    with spawn_server("harness.testing.scripted_server", "--fail-every", "1") as port:
        yield f"http://127.0.0.1:{port}"


def _sweep(url: str, results: Path, run_id: str, *extra: str):
    return harness("sweep", "engine=endpoint", f"engine.url={url}", *SMALL, *extra,
                   f"results_dir={results}", f"run_id={run_id}", timeout=300)


def test_sigterm_exits_143_with_the_points_kept_line(tmp_path, url) -> None:
    points = tmp_path / "t" / "points.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "sweep", "engine=endpoint",
         f"engine.url={url}", "concurrency=[1,2,3,4,5,6,7,8]", "scenario.requests_per_conc=4",
         "scenario.warmup_per_conc=0", f"results_dir={tmp_path}", "run_id=t"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: _lines(points) >= 1, 120, "a first point")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    said = [x.strip() for x in re.split(r"[\r\n]", err) if x.strip().startswith("interrupted")]
    assert len(said) == 1, err[-3000:]
    m = INTERRUPTED.match(said[0])
    kept = read_points(tmp_path / "t")
    assert m and int(m[1]) == len(kept) >= 1 and m[3] == "t", said[0]


def test_every_point_failed_exits_5_and_a_resume_keeps_each_point_once(
        tmp_path, url, failing_url) -> None:
    r = _sweep(failing_url, tmp_path, "f", "concurrency=[1,2]")
    assert r.returncode == 5, r.stdout[-2000:] + r.stderr[-2000:]
    assert "every point of" in r.stderr and "failed (2)" in r.stderr
    first = read_points(tmp_path / "f")
    assert len(first) == 2 and all(p["status"] == "failed" for p in first)
    r = _sweep(url, tmp_path, "f", "concurrency=[1,2]")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lines = (tmp_path / "f" / "points.jsonl").read_text().splitlines()
    ids = [re.search(r'"point_id":"([^"]+)"', x)[1] for x in lines]  # type: ignore[index]
    assert len(ids) == 2 == len(set(ids)), lines  # each point once: the failed lines replaced
    assert all(p["status"] == "ok" for p in read_points(tmp_path / "f"))
    assert not list((tmp_path / "f").glob(".points.jsonl.*"))  # no temp file left


@pytest.mark.parametrize("waived", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_an_mtp_label_the_server_never_shows_is_invalid_unless_waived(tmp_path, url,
                                                                      waived) -> None:
    r = _sweep(url, tmp_path, "s", "concurrency=[1]", "speculator=mtp", "speculator.k=3",
               f"speculator.unverified_ok={'true' if waived else 'false'}")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (p,) = read_points(tmp_path / "s")
    assert p["spec_method"] == "mtp" and p["spec_realised_al"] is None
    rule = next(x for x in p["validity"] if x["name"] == "speculation_observed")
    assert rule["ok"] is waived
    if waived:
        assert p["spec_unverified_ok"] is True and "waived" in rule["message"]
    else:
        assert any("mtp k=3 was never observed" in x for x in p["invalid_reasons"])
        assert not p["valid"]


# A SIGTERM whose handler runs while the main thread is inside a uvloop transport callback:
# uvloop catches BaseException there (handles/stream.pyx `__uv_stream_on_read_impl`), so
# without interrupts.guard_sigterm the exit is logged as a transport error and the loop runs
# on (about half the tries on a busy callback). Six tries, each must end the loop.
TRANSPORT_PROBE = r"""
import asyncio, os, signal, socket, threading
from harness.cli.main import Terminated, _terminate
from harness.client.streaming import run_async
from harness.sweep import interrupts

signal.signal(signal.SIGTERM, _terminate)
interrupts.guard_sigterm()
lsock = socket.socket(); lsock.bind(("127.0.0.1", 0)); lsock.listen()

def serve():  # a thread that never takes the signal: it must reach the loop's thread
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    while True:
        c, _ = lsock.accept()
        try:
            while True:
                c.sendall(b"x" * 64)
        except OSError:
            pass

threading.Thread(target=serve, daemon=True).start()

class Busy(asyncio.Protocol):
    def data_received(self, data):  # Python work inside the transport's callback
        n = 0
        for _ in range(2000):
            n += 1

def kill():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    os.kill(os.getpid(), signal.SIGTERM)

async def one():
    loop = asyncio.get_running_loop()
    await loop.create_connection(Busy, "127.0.0.1", lsock.getsockname()[1])
    threading.Timer(0.3, kill).start()
    await asyncio.sleep(3)

ended = 0
for _ in range(6):
    try:
        run_async(one())
    except Terminated as e:
        ended += e.code == 143
print("ended", ended)
"""


def test_a_sigterm_inside_a_transport_callback_still_ends_the_loop() -> None:
    r = subprocess.run([sys.executable, "-c", TRANSPORT_PROBE], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["ended", "6"], r.stdout + r.stderr[-3000:]
    assert "Fatal error on transport" not in r.stderr
