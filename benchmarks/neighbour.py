"""The embedded engine beside a neighbour, through the harness's own CLI: the default plain point
(`harness sweep`, llama.cpp from xllamacpp, 128/64 tokens, concurrency 1, a few requests) once
on the host as it is and once with one busy loop at the engine's priority (its engine.nice: 10
in the recipe), for each candidate engine setting. Per point it prints the median E2EL of its
requests, the slowdown the neighbour caused, and the point's validity verdict with
its failed rules (the host rule should fail every neighbour point; the quiet ones should pass on
a quiet host). Settings alternate within each round and the phases alternate per setting, so a
host whose background changes meets each setting alike.

    .venv/bin/python benchmarks/neighbour.py                       # < 5 min on 2 vCPUs
    .venv/bin/python benchmarks/neighbour.py --rounds 3 --settings default passive t1

A request the client has not finished in --timeout-s fails (a collapsed engine takes ~100 s a
request); its point's E2EL is then a lower bound, printed as ">".
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> the overrides that set it (beside the recipe's own defaults)
SETTINGS: dict[str, list[str]] = {
    # whatever recipes/engine/llamacpp.yaml says now: libgomp's own wait (no OMP_WAIT_POLICY:
    # spin up to 300,000 rounds at every barrier)
    "default": [],
    "passive": ["+engine.env.OMP_WAIT_POLICY=PASSIVE"],  # sleep at once at a barrier
    "spin1k": ["+engine.env.GOMP_SPINCOUNT=1000"],  # spin briefly, then sleep
    "t1": ["engine.threads=1", "engine.cpu_affinity=false"],  # one compute thread, unpinned
}


def engine_nice(setting: str) -> int:
    """The niceness the harness launches the engine at under this setting (the recipe's
    engine.nice: 10)."""
    from harness.config.compose import compose_sweep

    return compose_sweep(SETTINGS[setting]).engine.nice or 0


def busy_loop(nice: int) -> subprocess.Popen[bytes]:
    """One neighbour: a process outside the harness's tree, at the engine's priority."""
    return subprocess.Popen([sys.executable, "-c", "while 1: pass"],
                            preexec_fn=functools.partial(os.nice, nice))


def point(setting: str, neighbour: bool, requests: int, timeout_s: float, results: Path,
          run_id: str, max_point_s: float) -> dict:
    """One `harness sweep` of the default plain point; its record's figures that matter here."""
    args = [sys.executable, "-m", "harness.cli.main", "sweep", "concurrency=[1]",
            f"scenario.requests_per_conc={requests}", "scenario.warmup_per_conc=1",
            f"client.timeout_s={timeout_s:g}", f"results_dir={results}", f"run_id={run_id}",
            *SETTINGS[setting]]
    loop = busy_loop(engine_nice(setting)) if neighbour else None
    try:
        if loop is not None:
            time.sleep(1.0)  # the loop holds its core before the engine starts
        t0 = time.monotonic()
        h = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        try:
            out, _ = h.communicate(timeout=max_point_s)
        except subprocess.TimeoutExpired:  # stopped as a user would: SIGINT, then its engine
            h.send_signal(signal.SIGINT)
            try:
                out, _ = h.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                h.kill()
                out, _ = h.communicate()
        wall = time.monotonic() - t0
    finally:
        if loop is not None:
            loop.kill()
            loop.wait()
    row = {"setting": setting, "neighbour": neighbour, "wall_s": round(wall, 1),
           "rc": h.returncode}
    lines = (results / run_id / "points.jsonl")
    if not lines.exists():
        return {**row, "error": (out or "").strip().splitlines()[-1:]}
    p = json.loads(lines.read_text().splitlines()[-1])
    m = p.get("metrics") or p
    failed = [v["name"] for v in p.get("validity") or () if not v["ok"]]
    return {**row, "e2el_median_s": m.get("median_e2el"),
            "completed": m.get("num_completed"), "failed_requests": m.get("num_failed"),
            "valid": p.get("valid"), "status": p.get("status"), "failed_rules": failed,
            "reasons": [x[:160] for x in p.get("invalid_reasons") or ()],
            "host_foreign_cpu": p.get("host_foreign_cpu", m.get("host_foreign_cpu")),
            "host_steal_share": p.get("host_steal_share", m.get("host_steal_share"))}


def e2el(row: dict, timeout_s: float) -> tuple[float, bool]:
    """The point's median E2EL, and whether it is only a lower bound (requests timed out, or
    the sweep stopped before its point was written)."""
    v = row.get("e2el_median_s")
    failed = row.get("failed_requests") or 0
    if v is None or (failed and failed >= (row.get("completed") or 0)):
        return timeout_s, True
    return float(v), False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settings", nargs="+", choices=sorted(SETTINGS),
                    default=["default", "spin1k", "passive"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--timeout-s", type=float, default=10.0, help="client.timeout_s")
    ap.add_argument("--max-point-s", type=float, default=90.0,
                    help="a sweep still running then is stopped (SIGINT) and has no point")
    ap.add_argument("--out", type=Path, default=Path("/tmp/neighbour.jsonl"))
    a = ap.parse_args()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="neighbour-") as tmp:
        for rnd in range(a.rounds):
            order = a.settings if rnd % 2 == 0 else a.settings[::-1]
            for i, name in enumerate(order):
                phases = [False, True] if (rnd + i) % 2 == 0 else [True, False]
                for neighbour in phases:
                    run_id = f"{name}-{'n' if neighbour else 'q'}-{rnd}"
                    row = {"round": rnd, **point(name, neighbour, a.requests, a.timeout_s,
                                                 Path(tmp), run_id, a.max_point_s)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    with a.out.open("a") as out:
                        out.write(json.dumps(row) + "\n")
    print("\nsetting  phase      e2el_med_s  slowdown  valid  foreign_cpu  failed rules")
    for name in a.settings:
        per_round = []
        for rnd in range(a.rounds):
            q = next(r for r in rows if r["round"] == rnd and r["setting"] == name
                     and not r["neighbour"])
            n = next(r for r in rows if r["round"] == rnd and r["setting"] == name
                     and r["neighbour"])
            per_round.append((q, n))
        for label, idx in (("quiet", 0), ("neighbour", 1)):
            vals = [e2el(pr[idx], a.timeout_s) for pr in per_round]
            med = statistics.median(v for v, _ in vals)
            bound = any(b for _, b in vals)
            ratio = ""
            if idx == 1:
                qv = statistics.median(e2el(pr[0], a.timeout_s)[0] for pr in per_round)
                ratio = f"{'>' if bound else ''}{med / qv:.2f}x"
            last = per_round[-1][idx]
            foreign = last.get("host_foreign_cpu")
            print(f"{name:8s} {label:9s}  {'>' if bound else ' '}{med:9.3f}  {ratio:>8s}  "
                  f"{last.get('valid')!s:5s}  "
                  f"{foreign if foreign is None else round(foreign, 2)!s:>11}  "
                  f"{','.join(last.get('failed_rules') or []) or '-'}")
    print("\n(e2el: median per point, median of rounds; slowdown: neighbour / quiet; valid, "
          "foreign CPU and failed rules: the last round's point)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
