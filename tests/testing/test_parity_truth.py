"""The parity benchmark's truth: the scripted server's write log, read as benchmarks/parity.py
reads it, against a real server streaming k one-token events per write."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from benchmarks.parity_truth import errors, truth_from_log
from harness.testing.spawn import spawn_server

ROOT = Path(__file__).resolve().parents[2]


def _stream(url: str, rid: str, max_tokens: int) -> bytes:
    body = json.dumps({"prompt": "a b c", "max_tokens": max_tokens, "stream": True,
                       "x_id": rid}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


@pytest.mark.parametrize("per_write", [1, 48])
def test_truth_from_the_write_log(per_write: int) -> None:
    itl_ms = 20.0
    args = ["--ttft-ms", "30", "--itl-ms", str(itl_ms), "--tokens-per-chunk", str(per_write)]
    osl = 2 * per_write + 1  # a short last write: the log must count tokens, not writes
    with spawn_server("benchmarks.parity_server", *args, env={"PYTHONPATH": str(ROOT)}) as port:
        url = f"http://127.0.0.1:{port}"
        bodies = [_stream(url, f"r{i}", osl) for i in range(2)]
        log = json.loads(urllib.request.urlopen(url + "/x/log").read())
    # Every token is its own SSE event, however many share a write.
    events = [e for e in bodies[0].split(b"\n\n") if b'" tok"' in e]
    assert len(events) == osl
    assert [sum(log[r]["chunk_tokens"]) for r in ("r0", "r1")] == [osl, osl]
    assert len(log["r0"]["chunk_writes"]) == 3
    t = truth_from_log(log)
    assert t["requests"] == 2 and t["output_tokens"] == 2 * osl
    # Exact relations between the figures (each request has two write gaps), then the script.
    span_ms = t["e2el_ms"] - t["ttft_ms"]
    assert t["itl_write_ms"] == pytest.approx(span_ms / 2, rel=1e-6)
    assert t["tpot_ms"] == pytest.approx(span_ms / (osl - 1), rel=1e-6)
    assert t["itl_ms"] == pytest.approx(t["tpot_ms"], rel=1e-6)  # equal lengths: same mean
    # The script is absolute from the receive: a late first write shortens the gaps after it
    # (the server catches up), but no write is ever early.
    assert t["ttft_ms"] >= 30 and t["e2el_ms"] >= 30 + 2 * itl_ms
    assert t["window_s"] >= t["e2el_ms"] / 1e3 * 2  # sequential: the window holds both


def test_truth_and_errors_by_hand() -> None:
    log = {"a": {"received": 10.0, "chunk_writes": [10.1, 10.2, 10.3], "chunk_tokens": [1, 2, 1]},
           "b": {"received": 10.5, "chunk_writes": [10.6, 10.7], "chunk_tokens": [1, 1],
                 "truncated": True},
           "c": {"received": 11.0, "chunk_writes": [], "chunk_tokens": []}}
    t = truth_from_log(log)
    assert t["requests"] == 1 and t["output_tokens"] == 4
    assert t["ttft_ms"] == pytest.approx(100) and t["e2el_ms"] == pytest.approx(300)
    assert t["tpot_ms"] == pytest.approx(200 / 3) and t["itl_write_ms"] == pytest.approx(100)
    assert t["output_tput"] == pytest.approx(4 / 0.3)
    e = errors({"ttft_ms": 101.0, "output_tput": 2 * 4 / 0.3, "requests": 2}, t)
    assert e["ttft_ms"] == pytest.approx(1.0) and e["output_tput_pct"] == pytest.approx(100)
    assert e["requests"] == 1 and "tpot_ms" not in e

