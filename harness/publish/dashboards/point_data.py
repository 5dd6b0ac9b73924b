"""What a point's page shows, computed from the run directory's files (docs/dashboards.md).

    requests/<point_id>.parquet        every request with its chunk times (always)
    series/<point_id>.parquet          long-format time series (t_s, source, device, name,
                                       value), when the run sampled them
    server_metrics/<point_id>.json     the server's 1 s samples and the measured window on
                                       the requests' clock (older runs: the only series)

Times on the page are seconds since the point's measured start (negative: warmup). Pure
functions of arrays; the one reader is `point_payload`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow.parquet as pq

from harness.publish.dashboards.series_view import drawn_families
from harness.records import PHASE_MEASURED

REQUEST_COLUMNS = ("request_id", "phase", "issue_ts", "send_ts", "first_token_ts",
                   "last_token_ts", "end_ts", "chunk_ts", "completion_tokens", "http_status",
                   "error", "truncated", "tags", "spec_draft_tokens", "spec_accepted_tokens")
HIST_BINS = 40
CDF_POINTS = 400


def _percentile(v: np.ndarray, q: float) -> float:
    """Linear interpolation at rank (n-1)q/100 of sorted values (numpy's default)."""
    k = (v.size - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, v.size - 1)
    return float(v[lo] + (v[hi] - v[lo]) * (k - lo))


def distribution(values: np.ndarray) -> dict[str, Any]:
    """Histogram and CDF of finite values (the CDF thinned to at most CDF_POINTS steps)."""
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return {"n": 0, "hist_x": [], "hist_y": [], "cdf_x": [], "cdf_y": []}
    counts, edges = np.histogram(v, bins=HIST_BINS)
    idx = np.unique(np.linspace(0, v.size - 1, min(v.size, CDF_POINTS)).astype(int))
    return {"n": int(v.size), "hist_x": (edges[:-1] + edges[1:]) / 2,
            "hist_y": counts, "hist_width": float(edges[1] - edges[0]),
            "cdf_x": v[idx], "cdf_y": (idx + 1) / v.size,
            "p50": _percentile(v, 50), "p99": _percentile(v, 99)}


def _itl(offsets: np.ndarray, flat: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Per-chunk inter-token gaps of the kept requests, never across two requests."""
    d = np.diff(flat)
    owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    same = owner[1:] == owner[:-1] if owner.size > 1 else np.zeros(0, bool)
    return d[same & keep[owner[1:]]] if d.size else d


def over_time(start: np.ndarray, end: np.ndarray, flat: np.ndarray, weights: np.ndarray,
              t_min: float, t_max: float) -> dict[str, list[float]]:
    """Output tokens/s in 1 s bins (chunk arrivals weighted by tokens per chunk) and requests
    in flight at each bin's centre."""
    lo, hi = math.floor(t_min), math.ceil(t_max) + 1
    edges = np.arange(lo, max(hi, lo + 1) + 1, 1.0)
    tput, _ = np.histogram(flat, bins=edges, weights=weights)
    centres = (edges[:-1] + edges[1:]) / 2
    s, e = np.sort(start), np.sort(end)
    inflight = np.searchsorted(s, centres, "right") - np.searchsorted(e, centres, "right")
    return {"t": centres, "tput": tput, "inflight": inflight}


def read_requests(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    # ParquetFile.read: a fraction of read_table's per-file cost (10,000 small files)
    t = pq.ParquetFile(path).read()
    chunks = t.column("chunk_ts").combine_chunks()
    cols = {c: t.column(c).to_numpy(zero_copy_only=False) for c in REQUEST_COLUMNS
            if c in t.column_names and c != "chunk_ts"}
    cols["chunk_offsets"] = np.asarray(chunks.offsets, dtype=np.int64)
    cols["chunk_flat"] = np.asarray(chunks.flatten(), dtype=float)
    return cols


def _origin(window: Sequence[float] | None, r: dict[str, Any], measured: np.ndarray) -> float:
    if window:
        return float(window[0])
    send = r["send_ts"][measured] if measured.any() else r["send_ts"]
    return float(np.nanmin(send)) if send.size else 0.0


def request_figures(r: dict[str, Any], t0: float) -> dict[str, Any]:
    measured = r["phase"] == PHASE_MEASURED
    ok = (r["http_status"] == 200) & (r["error"] == "") & ~r["truncated"].astype(bool)
    keep = measured & ok
    send, first, end = (r[k] - t0 for k in ("send_ts", "first_token_ts", "end_ts"))
    off, flat = r["chunk_offsets"], r["chunk_flat"] - t0
    per_chunk = np.diff(off)
    # output tokens and TPOT as harness.record.metrics counts them: the server's usage, else chunks;
    # TPOT = (E2EL - TTFT) / (tokens - 1)
    tokens = np.where(r["completion_tokens"] >= 0, r["completion_tokens"], per_chunk)
    tokens = tokens.astype(float)
    tpot = np.where(tokens > 1, (end - first) / np.maximum(tokens - 1, 1), np.nan)
    # tokens per chunk: the server's count spread over its chunks (1 each when it sent none)
    w = np.repeat(tokens / np.maximum(per_chunk, 1), per_chunk)
    fin = np.isfinite(send) & np.isfinite(end)
    span = [float(np.nanmin(send)) if send.size else 0.0,
            float(np.nanmax(end[fin])) if fin.any() else 0.0]
    return {
        "requests": len(send), "measured": int(measured.sum()), "ok": int(keep.sum()),
        "dist": {"ttft": distribution((first - send)[keep]), "tpot": distribution(tpot[keep]),
                 "itl": distribution(_itl(off, flat, keep)),
                 "e2el": distribution((end - send)[keep])},
        "over_time": over_time(send[fin], end[fin], flat, w, span[0], span[1]),
    }


def spec_requests(r: dict[str, Any], keep: np.ndarray) -> dict[str, Any] | None:
    """Per-request acceptance where the server's reply carried draft counts (llama.cpp's
    `timings.draft_n` / `draft_n_accepted`): tokens per decode step (every step emits one
    token of its own plus the drafts it accepted: completion / (completion - accepted)) and
    the share of drafted tokens accepted. None when no kept request carried them."""
    if "spec_draft_tokens" not in r:
        return None
    drafted = r["spec_draft_tokens"].astype(float)
    accepted = r["spec_accepted_tokens"].astype(float)
    out_tok = r["completion_tokens"].astype(float)
    sel = keep & (drafted >= 0) & (out_tok > accepted) & (accepted >= 0)
    if not sel.any():
        return None
    per_step = out_tok[sel] / (out_tok[sel] - accepted[sel])
    rate = np.where(drafted[sel] > 0, accepted[sel] / np.maximum(drafted[sel], 1), np.nan)
    return {"n": int(sel.sum()), "tokens_per_step": distribution(per_step),
            "accept_rate": distribution(rate),
            "drafted": float(drafted[sel].sum()), "accepted": float(accepted[sel].sum())}


def timeline(r: dict[str, Any], t0: float) -> dict[str, Any]:
    """One bar per request, columnar: rows by lane and agent (tags), waiting (send to first
    token) and decoding (first token to end) apart, and the wait since the row's previous
    request ended (think time, tool time, the scheduler) as its own segment."""
    tags = [orjson.loads(t or "{}") for t in r["tags"]] if "tags" in r else \
        [{}] * len(r["send_ts"])
    names = [f"lane {t['lane']} · {t.get('agent') or 'main'}" if "lane" in t else "requests"
             for t in tags]
    rows = sorted(set(names), key=_row_order)
    row_of = {name: i for i, name in enumerate(rows)}
    row = np.array([row_of[n] for n in names], dtype=np.int64)
    send, first, end = (r[k] - t0 for k in ("send_ts", "first_token_ts", "end_ts"))
    wait_from = np.full(send.shape, np.nan)
    order = np.lexsort((np.nan_to_num(send), row))
    a, b = order[:-1], order[1:]
    gap = (row[a] == row[b]) & (end[a] < send[b])
    wait_from[b[gap]] = end[a[gap]]
    return {"rows": rows, "row": row, "id": r["request_id"], "phase": r["phase"], "send": send,
            "first": first, "end": end, "wait_from": wait_from,
            "subagent": [t.get("subagent_type") for t in tags]}


def _row_order(row: str) -> tuple[int, str]:
    head, _, agent = row.partition(" · ")
    lane = head.removeprefix("lane ")
    return (int(lane) if lane.isdigit() else -1, "" if agent == "main" else agent)


def read_series(root: Path, point_id: str, t0: float, server: dict[str, Any] | None
                ) -> tuple[str, list[dict[str, Any]]]:
    """Traces of the point's time series: the series file, else the server's samples."""
    path = root / "series" / f"{point_id}.parquet"
    if not path.exists():
        return "server_metrics", server_sample_traces(server or {}, t0)
    t = pq.ParquetFile(path).read()
    cols = {c: t.column(c).to_numpy(zero_copy_only=False)
            for c in ("t_s", "source", "device", "name", "value")}
    keys = [f"{a}\0{b}\0{c}" for a, b, c in zip(cols["source"], cols["device"], cols["name"],
                                                 strict=True)]
    uniq, inverse = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
    traces = []
    for k, key in enumerate(uniq):
        sel = np.flatnonzero(inverse == k)
        sel = sel[np.argsort(cols["t_s"][sel], kind="stable")]
        source, device, name = str(key).split("\0")
        traces.append({"source": source, "device": device, "name": name,
                       "t": cols["t_s"][sel].astype(float), "v": cols["value"][sel].astype(float)})
    return "series", traces


def server_sample_traces(server: dict[str, Any], t0: float) -> list[dict[str, Any]]:
    """The server's 1 s samples as traces; counters (`*_total`) as per-second rates."""
    samples = server.get("samples") or []
    names = sorted({k for s in samples for k in (s.get("metrics") or {})})
    traces = []
    for name in names:
        pts = [(s["t"] - t0, s["metrics"][name]) for s in samples
               if name in (s.get("metrics") or {}) and s["metrics"][name] is not None]
        t, v = [p[0] for p in pts], [float(p[1]) for p in pts]
        if name.endswith("_total") and len(t) > 1:  # a counter: its rate is what moves
            v = [(v[i] - v[i - 1]) / (t[i] - t[i - 1]) if t[i] > t[i - 1] else 0.0
                 for i in range(1, len(t))]
            t, name = t[1:], f"{name} /s"
        traces.append({"source": "server", "device": "", "name": name, "t": t, "v": v})
    return traces


def read_server_metrics(root: Path, point_id: str) -> dict[str, Any] | None:
    try:
        return orjson.loads((root / "server_metrics" / f"{point_id}.json").read_bytes())
    except FileNotFoundError:
        return None


def point_payload(point: dict[str, Any], root: Path) -> dict[str, Any]:
    """Everything one point's page draws; a point without request records (a published row)
    gets its numbers only."""
    pid = str(point["point_id"])
    r = read_requests(root / "requests" / f"{pid}.parquet")
    server = read_server_metrics(root, pid)
    w = (server or {}).get("measured_window")
    window = [float(w[0]), float(w[1])] if w else None
    out: dict[str, Any] = {"has_requests": r is not None}
    if r is None:
        out["series_source"], out["series"] = "none", []
        return out
    measured = r["phase"] == PHASE_MEASURED
    t0 = _origin(window, r, measured)
    out.update(request_figures(r, t0))
    ok = (r["http_status"] == 200) & (r["error"] == "") & ~r["truncated"].astype(bool)
    out["spec_requests"] = spec_requests(r, measured & ok)
    out["window"] = [0.0, window[1] - t0] if window else None
    out["timeline"] = timeline(r, t0)
    out["series_source"], series = read_series(root, pid, t0, server)
    out["series"], out["series_zero"] = drawn_families(series)
    out["slo"] = slo_figures(point, r)
    return out


def slo_figures(point: dict[str, Any], r: dict[str, Any]) -> dict[str, Any] | None:
    """Each measured request against the point's SLOs (docs/slo.md): TTFT, TPOT (0 for one
    output token, as goodput counts it) and E2EL in ms, and whether it met every one."""
    bounds = {k: point.get(f"slo_{k}_ms") for k in ("ttft", "tpot", "e2el")}
    bounds = {k: float(v) for k, v in bounds.items() if v is not None}
    if not bounds:
        return None
    measured = r["phase"] == PHASE_MEASURED
    ok = (r["http_status"] == 200) & (r["error"] == "") & ~r["truncated"].astype(bool)
    per_chunk = np.diff(r["chunk_offsets"])
    tokens = np.where(r["completion_tokens"] >= 0, r["completion_tokens"], per_chunk)
    send, first = r["send_ts"], r["first_token_ts"]
    last = r["last_token_ts"] if "last_token_ts" in r else r["end_ts"]
    vals = {"ttft": (first - send) * 1e3, "e2el": (last - send) * 1e3,
            "tpot": np.where(tokens > 1, (last - first) / np.maximum(tokens - 1, 1), 0.0) * 1e3}
    sel = measured
    good = ok.copy()
    for k, b in bounds.items():
        good &= np.nan_to_num(vals[k], nan=np.inf) <= b
    return {"bounds": bounds, "ttft": vals["ttft"][sel], "tpot": vals["tpot"][sel],
            "e2el": vals["e2el"][sel], "good": good[sel], "failed": ~ok[sel]}
