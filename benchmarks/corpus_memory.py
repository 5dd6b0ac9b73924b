"""Peak memory and speed of reading an AgentX-sized corpus through `datasets` (docs/corpus.md).

Generates a corpus shaped like `semianalysisai/cc-traces-weka-062126` (393 traces, ~250
requests each, contexts growing to tens of thousands of 64-token blocks, ~4 sub-agents per trace
with ~25 requests each, shared system prefix ids; ~4.6 MB per row) as `traces.jsonl` in a temp
dir, then measures, each in a fresh process so its peak RSS is its own:

- stream: every row validated, parsed and folded into `harness traces stats` figures, one
  trace at a time (what statistics, the fit check and selection by length need);
- replay set: the rows kept as parsed traces, as a replay holds them (`load_corpus`, hash ids
  shared per trace), for the first --keep rows, and the same without sharing for comparison.

Run: nice python benchmarks/corpus_memory.py [--gb 1.0] [--keep 64] [--dir DIR]
Last line: `corpus_memory rows=N gb=X peak_rss_mb=Y rows_per_s=Z` (the streaming pass).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROW_TARGET_BYTES = 4.6e6  # 1.8 GB / 393 rows, the published corpus's average


def _request(t: float, ids: list[int], out: int, rng: random.Random) -> dict:
    return {"t": round(t, 3), "type": "n", "model": "claude-opus-4-5-20251101",
            "in": len(ids) * 64, "out": out, "hash_ids": ids, "input_types": ["text"],
            "output_types": ["text"], "stop": "tool_use", "api_time": round(rng.uniform(1, 30), 2),
            "think_time": round(rng.expovariate(1 / 5), 2)}


def _chain(n: int, start_blocks: int, grow: int, t0: float, first_id: int,
           rng: random.Random) -> tuple[list[dict], int]:
    """A session's turns: each resends the whole context so far plus new blocks (ids 1..230
    are the shared system prefix; a sub-agent starts from it with ids of its own)."""
    ctx = list(range(1, 231)) + list(range(first_id, first_id + start_blocks))
    nxt, t, out = first_id + start_blocks, t0, []
    for _ in range(n):
        out.append(_request(t, ctx, rng.randint(50, 4000), rng))
        new = rng.randint(grow // 2, grow * 3 // 2)
        ctx = ctx + list(range(nxt, nxt + new))
        nxt += new
        t += rng.uniform(5, 60)
    return out, nxt


def make_row(i: int, rng: random.Random) -> dict:
    turns = rng.randint(100, 190)
    items, nxt = _chain(turns, 20, 64, 0.0, 1000, rng)
    for k in range(rng.randint(2, 6)):  # sub-agents spliced between parent turns
        inner, nxt = _chain(rng.randint(15, 35), 10, 25, 0.0, nxt, rng)
        at = rng.randrange(1, len(items))
        t = items[at - 1]["t"] + 1.0
        items.insert(at, {"t": t, "type": "subagent", "agent_id": f"agent_{k:03d}",
                          "subagent_type": "Explore", "duration_ms": 120_000,
                          "total_tokens": sum(r["in"] for r in inner), "tool_use_count": 9,
                          "status": "completed", "requests": inner,
                          "models": ["claude-opus-4-5-20251101"]})
    return {"id": f"trace_{i:04d}", "models": ["claude-opus-4-5-20251101"], "block_size": 64,
            "hash_id_scope": "local", "tool_tokens": 11899, "system_tokens": 2765,
            "requests": items}


def generate(path: Path, gb: float) -> tuple[int, int]:
    rng, rows, size = random.Random(0), 0, 0
    with path.open("wb") as f:
        while size < gb * 1e9:
            line = orjson.dumps(make_row(rows, rng)) + b"\n"
            f.write(line)
            size += len(line)
            rows += 1
    return rows, size


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    """Resident memory now, after freed heap memory is handed back (what is actually held)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(phase: str, d: Path, keep: int) -> dict:
    from harness.config.schema import DatasetConfig
    from harness.workloads.traces.corpus import iter_traces, load_corpus, resolve, select
    from harness.workloads.traces.corpus_stats import streaming_stats

    # The baseline: datasets imported and warmed on a one-row corpus (~330 MB of libraries).
    warm = d / "warm"
    warm.mkdir(exist_ok=True)
    (warm / "traces.jsonl").write_bytes(orjson.dumps(make_row(0, random.Random(1))) + b"\n")
    load_corpus(DatasetConfig(local_dir=str(warm)), warm, "b")
    before = _rss_mb()
    t0 = time.perf_counter()
    if phase == "stream":
        acc = streaming_stats(iter_traces(resolve(DatasetConfig(local_dir=str(d)), d, "b")))
        rows, ids = acc.sessions, acc.requests
    elif phase == "keep":
        traces = load_corpus(DatasetConfig(local_dir=str(d), max_entries=keep), d, "b")
        rows, ids = len(traces), sum(len(r.hash_ids) for t in traces for r in t.requests())
    else:  # keep_plain: the same rows without shared hash-id objects
        src = resolve(DatasetConfig(local_dir=str(d)), d, "b")
        traces = list(select(iter_traces(src), keep))
        rows, ids = len(traces), sum(len(r.hash_ids) for t in traces for r in t.requests())
    dt = time.perf_counter() - t0
    return {"phase": phase, "rows": rows, "count": ids, "s": dt, "rss_mb_before": before,
            "rss_mb_after": _rss_mb(), "peak_rss_mb": _peak_mb()}


def _child(phase: str, d: Path, keep: int) -> dict:
    r = subprocess.run([sys.executable, __file__, "--measure", phase, "--dir", str(d),
                        "--keep", str(keep)], capture_output=True, text=True, check=True,
                       env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gb", type=float, default=1.0)
    p.add_argument("--keep", type=int, default=64, help="rows kept in the replay-set phases")
    p.add_argument("--dir", type=Path, default=None, help="reuse/keep the corpus here")
    p.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.measure:
        print(json.dumps(measure(a.measure, a.dir, a.keep)))
        return
    tmp = tempfile.TemporaryDirectory(prefix="corpus_memory_") if a.dir is None else None
    d = Path(tmp.name) if tmp else a.dir
    d.mkdir(parents=True, exist_ok=True)
    f = d / "traces.jsonl"
    t0 = time.perf_counter()
    if not f.exists():
        rows, size = generate(f, a.gb)
        print(f"generated {rows} rows, {size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s")
    size = f.stat().st_size
    try:
        s = _child("stream", d, a.keep)
        print(f"stream: {s['rows']} rows, {s['count']:,} requests in {s['s']:.1f} s "
              f"({size / 1e6 / s['s']:.0f} MB/s); peak RSS {s['peak_rss_mb']:.0f} MB, "
              f"{s['peak_rss_mb'] - s['rss_mb_before']:.0f} MB over the warmed libraries' "
              f"{s['rss_mb_before']:.0f} MB")
        for phase in ("keep", "keep_plain"):
            k = _child(phase, d, a.keep)
            kept = (k["rss_mb_after"] - k["rss_mb_before"]) * 2**20
            print(f"{phase}: {k['rows']} rows parsed and kept in {k['s']:.1f} s, "
                  f"{k['count']:,} hash ids: {kept / 2**20:.0f} MB held "
                  f"({kept / k['count']:.1f} B per hash id), peak RSS {k['peak_rss_mb']:.0f} MB")
        print(f"corpus_memory rows={s['rows']} gb={size / 1e9:.2f} "
              f"peak_rss_mb={s['peak_rss_mb']:.0f} rows_per_s={s['rows'] / s['s']:.1f}")
    finally:
        if tmp:
            tmp.cleanup()


if __name__ == "__main__":
    main()
