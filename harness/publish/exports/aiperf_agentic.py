"""An agentic point as AIPerf's artifacts, the inputs of InferenceX's AgentX aggregation:
`<RESULT_FILENAME>/aiperf_artifacts/{profile_export.jsonl, profile_export_aiperf.json,
server_metrics_export.json}` and `<RESULT_FILENAME>.env`.

The files, each in its own module: the request records and the aggregate
(harness.publish.exports.aiperf_records), the server metrics
(harness.publish.exports.aiperf_server_metrics);
here the point's files are read and the environment is written. A record's epoch stamps come
from the point's measured window, stamped on both clocks (Clock).

Throughput: InferenceX divides the kept records' tokens by their span (last request_end_ns -
first request_start_ns), which is our agentic point's measured window; the timestamps are
written as measured.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from harness.publish.exports.aiperf_records import Clock, aggregate, profile_lines
from harness.publish.exports.aiperf_server_metrics import server_metrics_export
from harness.publish.exports.inferencex_fixed import base_env, env_text, job_config
from harness.record.point_record import PointRecord
from harness.record.results import atomic_write, dumps
from harness.records import PHASE_MEASURED, RequestRecord

ARTIFACTS = "aiperf_artifacts"
_RECORD_FIELDS = tuple(RequestRecord.__dataclass_fields__)


class ArtifactError(ValueError):
    """The point's files in the run directory cannot be read."""


def read_requests(run_dir: Path, point_id: str) -> list[RequestRecord]:
    """requests/<point_id>.parquet back into RequestRecords (warmup and probes included)."""
    import pandas as pd

    path = run_dir / "requests" / f"{point_id}.parquet"
    if not path.is_file():
        raise ArtifactError(f"{path}: missing; an agentic point cannot be exported without "
                            "its requests (re-measure it: harness sweep with the same run_id)")
    try:
        rows = pd.read_parquet(path).to_dict("records")
    except Exception as e:  # pyarrow raises several types for one bad file
        raise ArtifactError(f"{path}: unreadable ({e})") from None
    out = []
    for row in rows:
        kw = {k: v for k, v in row.items() if k in _RECORD_FIELDS}
        kw["chunk_ts"] = [float(t) for t in row.get("chunk_ts", ())]
        kw["chunk_tokens"] = [int(t) for t in row.get("chunk_tokens", ())]
        kw["tags"] = orjson.loads(row.get("tags") or "{}")
        out.append(RequestRecord(**kw))
    return out


def clock_for(rec: PointRecord, sm: Mapping[str, Any],
              records: Sequence[RequestRecord]) -> Clock:
    window = sm.get("measured_window") or []
    sends = [r.send_ts for r in records if r.phase == PHASE_MEASURED and math.isfinite(r.send_ts)]
    mono0 = float(window[0]) if window else min(sends, default=0.0)
    wall = rec.provenance.get("measured_start_wall")
    wall0 = float(wall) if isinstance(wall, int | float) else time.time()
    return Clock(mono0, round(wall0 * 1e9))


def agentic_env(rec: PointRecord, name: str, cfg: Mapping[str, Any]) -> dict[str, str]:
    """Every variable process_agentic_result.py reads (infx/results/agentic/__init__.py
    @1fe2755144ea7ca66b1244c14a7b4d982a2cacc0, docs/upstream/agentx.md §2.1). RESULT_DIR is
    relative: run the aggregation from the export directory."""
    scen = cfg.get("scenario") or {}
    return {**base_env(rec), "RESULT_FILENAME": name, "RESULT_DIR": name,
            "AGENTIC_OUTPUT_DIR": ".", "SCENARIO_TYPE": "agentic-coding", "IS_AGENTIC": "1",
            # their workflow passes ISL = OSL = 0 for agentic jobs
            "ISL": "0", "OSL": "0", "DURATION": str(scen.get("duration_s", "")),
            # no KV offload here; the backend fields must then be empty
            "KV_OFFLOADING": "none", "KV_OFFLOAD_BACKEND": "",
            "KV_OFFLOAD_BACKEND_METADATA": "", "TOTAL_CPU_DRAM_GB": "0",
            # read when set (build_result's attn_dp_size): attention dp spans the tp ranks
            **({"ATTN_DP_SIZE": str(rec.identity.tp)} if rec.identity.dp_attention else {})}


def export_point(run_dir: Path, rec: PointRecord, name: str, out: Path) -> list[Path]:
    cfg = job_config(run_dir, rec)
    sm = _server_metrics(run_dir, rec.point_id)
    records = read_requests(run_dir, rec.point_id)
    clock = clock_for(rec, sm, records)
    lines = profile_lines(records, clock)
    art = out / name / ARTIFACTS
    files = {
        art / "profile_export.jsonl": b"".join(dumps(x) + b"\n" for x in lines),
        art / "profile_export_aiperf.json": dumps(aggregate(lines, rec, cfg)),
        art / "server_metrics_export.json": dumps(server_metrics_export(sm, rec, cfg, clock)),
        out / f"{name}.env": env_text(agentic_env(rec, name, cfg)),
    }
    for path, data in files.items():
        atomic_write(path, data)
    return list(files)


def _server_metrics(run_dir: Path, point_id: str) -> dict[str, Any]:
    path = run_dir / "server_metrics" / f"{point_id}.json"
    if not path.is_file():
        return {}
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as e:
        raise ArtifactError(f"{path}: unreadable ({e})") from None
