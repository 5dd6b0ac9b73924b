"""Dashboard and curves at scale: 10,000 points with 1,000,000 request records in all.

    nice .venv/bin/python benchmarks/dashboard_scale.py [--points 10000] [--requests 1000000]

Builds a synthetic run directory (not timed: points.jsonl, one requests Parquet file per point
with chunk times, server samples for every point), then times, and prints:
  - curves: every series' frontier, the canonical agentic winners and the interpolation at
    three target interactivities (harness.publish.curves)
  - dashboard: `write_dashboard`'s main page, then with every point's page (first build,
    and a rebuild with nothing changed, which keeps every page)
Target (docs/dashboards.md): curves and dashboard together in <= 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.publish.curves import canonical_agentic_ids, interpolate_on_frontier
from harness.publish.dashboards.page import load_points, payload_points, write_dashboard

CHUNKS = 16


def _point(i: int, rng: np.random.Generator) -> dict:
    series = i % 200
    kind = "agentic" if series % 4 == 0 else "fixed"
    conc = 2 ** (i // 200 % 10)
    return {"schema_version": 2, "point_id": f"p{i}", "run_id": "scale", "model": f"m{series % 5}",
            "precision": "fp8", "chip": "b200", "engine": f"e{series}", "spec_method": "none",
            "tp": 8, "ep": 1, "dp_attention": False, "pp": 1, "gpus": 8,
            "scenario": "agentic-weka" if kind == "agentic" else "fixed-1k1k",
            "scenario_kind": kind, "isl": 1024, "osl": 1024, "conc": conc, "repeat": i // 2000,
            "status": "ok", "valid": bool(rng.random() > 0.05), "invalid_reasons": [],
            "date": f"2026-0{1 + i // 2000 % 9}-01", "tput_per_gpu": float(100 * conc ** 0.7),
            "output_tput_per_gpu": float(50 * conc ** 0.7), "median_intvty": 200.0 / conc,
            "p90_e2e_intvty": 60.0 / conc, "chip_power_kw_all_in": 1.7,
            "chip_cost_hyperscaler": 1.7, "chip_cost_neocloud": 2.0, "chip_cost_rental_3yr": 2.6}


def _requests(n: int, rng: np.random.Generator, agentic: bool) -> pa.Table:
    send = np.sort(rng.uniform(0, 60, n))
    first = send + rng.uniform(0.05, 0.5, n)
    chunks = first[:, None] + np.cumsum(rng.uniform(0.005, 0.02, (n, CHUNKS)), axis=1)
    tags = [json.dumps({"lane": int(k % 8), "agent": "" if k % 3 else "agent_1", "turn": int(k)})
            if agentic else "{}" for k in range(n)]
    return pa.table({
        "request_id": [f"r{k}" for k in range(n)],
        "phase": ["warmup" if k < 2 else "measured" for k in range(n)],
        "issue_ts": send, "send_ts": send, "first_token_ts": first,
        "last_token_ts": chunks[:, -1], "end_ts": chunks[:, -1] + 1e-3,
        "chunk_ts": pa.array(list(chunks), type=pa.list_(pa.float64())),
        "completion_tokens": np.full(n, CHUNKS), "http_status": np.full(n, 200),
        "error": [""] * n, "truncated": np.zeros(n, bool), "tags": tags})


def build(root: Path, points: int, requests: int) -> Path:
    run = root / "scale"
    (run / "requests").mkdir(parents=True)
    (run / "server_metrics").mkdir()
    rng = np.random.default_rng(0)
    per = requests // points
    samples = {"measured_window": [0.0, 60.0], "samples": [
        {"t": float(t), "metrics": {"vllm:num_requests_running": 3.0, "vllm:kv_cache_usage_perc":
                                    0.4, "vllm:prompt_tokens_total": float(t * 100)}}
        for t in range(62)]}
    blob = json.dumps(samples)
    tables = {kind: _requests(per, rng, kind) for kind in (False, True)}
    with open(run / "points.jsonl", "w") as f:
        for i in range(points):
            p = _point(i, rng)
            f.write(json.dumps(p) + "\n")
            pq.write_table(tables[p["scenario_kind"] == "agentic"],
                           run / "requests" / f"p{i}.parquet")
            (run / "server_metrics" / f"p{i}.json").write_text(blob)
    return run


def time_curves(run: Path) -> float:
    t = time.perf_counter()
    pts = payload_points(load_points([run]))
    canonical_agentic_ids([p for p in pts if p["scenario_kind"] == "agentic"], "tput_per_gpu")
    by: dict[str, list] = {}
    for p in pts:
        by.setdefault(p["series"] + p["scenario"], []).append(p)
    for sp in by.values():
        for target in (20.0, 40.0, 60.0):
            interpolate_on_frontier(sp, target, "median_intvty",
                                    ["tput_per_gpu", "cost_per_mtok_hyperscaler"])
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=1_000_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run = build(Path(tmp), a.points, a.requests)
        print(f"built {a.points} points, {a.requests} requests in {time.perf_counter() - t:.1f} s"
              " (not timed)")
        curves = time_curves(run)
        out = Path(tmp) / "d.html"
        t = time.perf_counter()
        write_dashboard([run], out, "scale", point_pages=False)
        main_s = time.perf_counter() - t
        t = time.perf_counter()
        write_dashboard([run], out, "scale")
        cold = time.perf_counter() - t
        t = time.perf_counter()
        write_dashboard([run], out, "scale")
        warm = time.perf_counter() - t
        pages = sum(1 for _ in (Path(tmp) / "d_points").rglob("*.html"))
        size = sum(f.stat().st_size for f in (Path(tmp) / "d_points").rglob("*")
                   if f.is_file()) + out.stat().st_size
        print(f"curves: {curves:.2f} s   dashboard (main page): {main_s:.2f} s   "
              f"curves + dashboard: {curves + main_s:.2f} s (target <= 10 s)")
        print(f"with {pages} point pages: first build {cold:.2f} s "
              f"({cold / max(pages, 1) * 1e3:.2f} ms/page on {os.cpu_count()} cores), "
              f"rebuild with nothing changed {warm:.2f} s   on disk {size / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
