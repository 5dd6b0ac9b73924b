"""`harness catalog verify-e2e` on a sample of shipped keys (the full walk is a command, not a
test: docs in harness/testing/catalog_e2e.py): a fixed key without speculation, a fixed spec
key verifying its injected AL, and an agentic spec key whose router row puts the router
emulator in front of an 8-rank engine emulator; one emulator per shape, retuned per key, all
in this process. A broken injection (the emulator's --al-bias) must fail the key."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request

import orjson
import pytest

from harness.sweep.attach_check import Short
from harness.testing.catalog_e2e import retune, verify
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server

# Each key is a whole sweep job against a real emulator process (seconds each).
pytestmark = pytest.mark.slow

SAMPLE = ["dsv4-fp4-b200-vllm", "dsv4-fp4-b200-trt-mtp", "dsv4-fp4-b200-vllm-agentic-mtp"]
# 8 ranks at concurrency 32 draw hundreds of drafts a second: half the command's agentic window
FAST = Short(agentic_s=5.0, tokenizer=str(tokenizer_file().parent))


def test_a_sample_of_keys_verifies_end_to_end(tmp_path) -> None:
    by_key = {r.point.key: r for r in verify(SAMPLE, tmp_path, FAST)}
    assert set(by_key) == set(SAMPLE)
    for r in by_key.values():
        assert r.ok, (r.point.key, r.why_not)
    plain, spec, agentic = (by_key[k] for k in SAMPLE)
    assert plain.point.al is None and plain.point.k == 0
    assert spec.point.al == pytest.approx(2.49) and spec.point.k == 3
    assert abs(spec.realised_al / spec.point.al - 1) <= 0.02, spec.realised_al
    p = agentic.point
    assert (p.kind, p.router, p.dp, p.engine) == ("agentic", "vllm-router", 8, "vllm")
    assert p.concurrency == 32  # the router row's smallest, not the key's smallest (1)
    assert abs(agentic.realised_al / p.al - 1) <= 0.05, agentic.realised_al
    assert agentic.extra["draws"] >= 200
    # the key's own run directory holds the one point the sweep's runner wrote
    assert (tmp_path / "runs" / p.key / "points.jsonl").is_file()


def test_a_wrong_realised_al_fails_the_key(tmp_path) -> None:
    [r] = verify(["dsv4-fp4-b200-trt-mtp"], tmp_path, FAST, bias=-0.25)
    assert not r.ok and r.realised_al is not None
    assert abs(r.realised_al - (2.49 - 0.25)) < 0.1
    assert "outside its 99.9% interval" in r.why_not, r.why_not


def test_a_glob_matching_no_key_is_refused_before_anything_starts() -> None:
    r = subprocess.run([sys.executable, "-m", "harness.cli", "catalog", "verify-e2e",
                        "--keys", "no-such-key*"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "no shipped key matches 'no-such-key*'" in r.stderr


def test_the_emulator_is_retuned_between_keys_and_refuses_a_bad_al() -> None:
    with spawn_server("harness.testing.emulator_tunable", "--engine", "vllm") as port:
        retune(port, 3.0, 4, 0.0, 2.0)
        with pytest.raises(urllib.error.HTTPError) as e:  # AL above k + 1
            retune(port, 4.5, 2, 0.0, 2.0)
        assert e.value.code == 400
        req = urllib.request.Request(f"http://127.0.0.1:{port}/debug/acceptance",
                                     data=orjson.dumps({"al": 2.0, "k": 1}), method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert orjson.loads(r.read()) == {"al": 2.0, "k": 1, "al_bias": 0.0}
