"""Peer benchmark clients and the harness against one scripted server whose write log is the truth.

Each cell (tool x concurrency x events per write) gets a fresh server
(benchmarks/parity_server.py: harness.testing.scripted_server, k one-token SSE events per write),
runs the tool as its user would, reads the server's write log (GET /x/log) and writes the tool's
error per metric against it (benchmarks/parity_truth.py). Peer tools live in their own virtualenvs
under .venv-parity/<tool>, installed on first use with pip at the pinned version; none is a
harness dependency. `vllm bench serve` comes from .venv-vllm (`make vllm-env`) and is skipped
when that is absent. docs/parity.md has the table, the commands and what each tool counts.

Run: .venv/bin/python -m benchmarks.parity [--quick] [--tools harness aiperf ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import sys
import time
import urllib.request
from pathlib import Path

from benchmarks.parity_peers import TOOLS
from benchmarks.parity_tools import Cell, ToolError
from benchmarks.parity_truth import errors, truth_from_log
from harness.testing.spawn import spawn_server

ROOT = Path(__file__).resolve().parent.parent
# Per events-per-write shape: the server's script. One event per write is a token stream; 48 per
# write is a burst (speculative decoding, batched flushes) with the same ~4 writes per 100 ms.
SHAPES = {1: {"osl": 64, "ttft_ms": 30.0, "itl_ms": 4.0},
          48: {"osl": 192, "ttft_ms": 30.0, "itl_ms": 20.0}}


def requests_for(conc: int, quick: bool) -> int:
    return max(8, 3 * conc) if quick else max(20, 8 * conc)


def run_cell(tool: str, cell: Cell, work: Path) -> dict:
    shape = SHAPES[cell.events_per_write]
    args = ["--ttft-ms", str(shape["ttft_ms"]), "--itl-ms", str(shape["itl_ms"]),
            "--tokens-per-chunk", str(cell.events_per_write)]
    row: dict = {"tool": tool, "concurrency": cell.concurrency,
                 "events_per_write": cell.events_per_write, "requests_sent": cell.requests,
                 "loadavg_1m": round(os.getloadavg()[0], 2)}
    with spawn_server("benchmarks.parity_server", *args, env={"PYTHONPATH": str(ROOT)}) as port:
        url = f"http://127.0.0.1:{port}"
        t0 = time.monotonic()
        try:
            measured, cmd = TOOLS[tool].run(url, cell, work)
        except ToolError as e:
            row.update(error=str(e))
            return row
        row["wall_s"] = round(time.monotonic() - t0, 2)
        log = json.loads(urllib.request.urlopen(url + "/x/log", timeout=30).read())
    try:
        skip = TOOLS[tool].unmeasured(log)
    except ToolError as e:
        row.update(error=str(e), command=cmd, measured=measured, server_requests=len(log))
        return row
    truth = truth_from_log({k: v for k, v in log.items() if k not in skip})
    row.update(command=cmd, measured=measured, truth=truth, error_vs_truth=errors(measured, truth),
               server_requests=len(log), unmeasured_requests=len(skip))
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS))
    p.add_argument("--concurrency", nargs="+", type=int, default=[1, 8, 32])
    p.add_argument("--events-per-write", nargs="+", type=int, default=[1, 48],
                   choices=sorted(SHAPES))
    p.add_argument("--quick", action="store_true", help="3 x concurrency requests a cell (min 8)")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "parity")
    p.add_argument("--table", type=Path, help="print the table of an earlier run's cells.jsonl")
    a = p.parse_args(argv)
    if a.table:
        print(markdown(a.table))
        return 0
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out_dir = a.out / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    rows_path = out_dir / "cells.jsonl"
    skipped: dict[str, str] = {}
    versions: dict[str, str] = {}
    for tool in a.tools:
        why = TOOLS[tool].prepare()
        if why:
            skipped[tool] = why
            print(f"skip {tool}: {why}", flush=True)
        else:
            versions[tool] = TOOLS[tool].version()
    # Tools take turns within each cell, so a busy spell of the host falls on all of them alike
    # rather than on whichever tool's cells it happened to meet.
    for epw in a.events_per_write:
        for conc in a.concurrency:
            cell = Cell(conc, epw, requests_for(conc, a.quick), SHAPES[epw]["osl"])
            for tool in versions:
                work = out_dir / f"{tool}-c{conc}-e{epw}"
                work.mkdir(exist_ok=True)
                row = run_cell(tool, cell, work)
                with rows_path.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(summary_line(row), flush=True)
    (out_dir / "skipped.json").write_text(json.dumps(skipped, indent=1))
    (out_dir / "versions.json").write_text(json.dumps(versions, indent=1))
    print(f"versions: {versions}")
    print(f"cells: {rows_path}")
    with contextlib.suppress(Exception):
        print(markdown(rows_path))
    return 0


def _fmt(v: float | None, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:+.{digits}f}"


def summary_line(row: dict) -> str:
    head = f"{row['tool']:>15} c{row['concurrency']:<3} e{row['events_per_write']:<3}"
    if "error" in row:
        return f"{head} FAILED: {row['error'][:300]}"
    e = row["error_vs_truth"]
    return (f"{head} ttft {_fmt(e.get('ttft_ms'))} ms  tpot {_fmt(e.get('tpot_ms'), 3)} ms  "
            f"itl {_fmt(e.get('itl_ms'), 3)} ms  e2el {_fmt(e.get('e2el_ms'))} ms  "
            f"tput {_fmt(e.get('output_tput_pct'), 1)} %  n {_fmt(e.get('requests'), 0)}")


def markdown(rows_path: Path) -> str:
    """The docs/parity.md table: one line per tool and cell, error = tool - truth."""
    lines = ["| tool | conc | events/write | TTFT ms | TPOT ms | ITL ms | E2EL ms | "
             "out tput % | requests | truth TTFT / TPOT / E2EL ms, tok/s | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for raw in rows_path.read_text().splitlines():
        r = json.loads(raw)
        if "error" in r:
            lines.append(f"| {r['tool']} | {r['concurrency']} | {r['events_per_write']} | "
                         f"failed: {r['error'][:120]} | | | | | | | |")
            continue
        e, t = r["error_vs_truth"], r["truth"]
        lines.append(
            f"| {r['tool']} | {r['concurrency']} | {r['events_per_write']} | "
            f"{_fmt(e.get('ttft_ms'))} | {_fmt(e.get('tpot_ms'), 3)} | "
            f"{_fmt(e.get('itl_ms'), 3)} | {_fmt(e.get('e2el_ms'))} | "
            f"{_fmt(e.get('output_tput_pct'), 1)} | {_fmt(e.get('requests'), 0)} | "
            f"{t['ttft_ms']:.2f} / {t['tpot_ms']:.3f} / {t['e2el_ms']:.1f}, "
            f"{t['output_tput']:.0f} | {r.get('loadavg_1m', '-')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
