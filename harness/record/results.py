"""Run directories on disk: `results/<run_id>/`.

    run.json                    provenance of the run (versions, git revision, host, command)
    configs/<job>.yaml          the resolved config of every job (one engine launch each)
    points.jsonl                one JSON object per point, appended when the point is complete
                                (a point measured again replaces its line: rewritten atomically)
    requests/<point_id>.parquet every request record of the point (warmup included, flagged)
    servers/<launch>.log        the engine's log
    server_metrics/<point_id>.json  /metrics scrapes before, through and after the point
    series/<point_id>.parquet   the point's time series, long format (docs/series.md)
    power/<point_id>.json       the point's power audit, where telemetry ran (docs/energy.md)
    .lock                       held (flock) by the one sweep process writing here; its PID

Every file is written atomically (temp file + rename); a point's line is appended only after
its Parquet file is in place, so a killed run never leaves a half-written point, and rerunning
the same run_id finishes it (complete points are skipped by their stable id; failed points are
measured again).

Every write failure (disk full, a read-only directory, a vanished mount) raises one exception,
`ResultsWriteError`, naming the path and the reason; nothing already on disk is touched by it.
If a point's Parquet file was written but its points.jsonl line could not be, the point does
not count as done: resuming the run re-measures it (and overwrites the orphan Parquet file).

points.jsonl is read line by line; a torn line (a writer killed mid-write, a short write) is
skipped with a warning that counts it, and a complete object glued behind a torn one is still
recovered, so no torn line can hide the points after it. An append always starts on a fresh
line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import logging
import math
import os
import socket
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from harness.config.run_id import run_id_problem
from harness.record.file_names import safe_name
from harness.record.points_file import (
    POINTS_FILE,
    parse_line,
    read_points,
    read_points_counted,
)
from harness.record.provenance import git_revision, package_versions
from harness.records import RequestRecord

log = logging.getLogger("harness")

__all__ = ["POINTS_FILE", "ResultsWriteError", "RunDir", "RunLocked", "atomic_write",
           "read_points", "read_points_counted", "safe_name"]
LOCK_FILE = ".lock"


class ResultsWriteError(Exception):
    """A results file could not be written. `path` the file, `reason` the OS's words."""

    def __init__(self, path: str | Path, reason: str,
                 fix: str = "free space or make the directory writable, then rerun",
                 errno_: int | None = None) -> None:
        self.path, self.reason, self.fix, self.errno = Path(path), reason, fix, errno_
        super().__init__(f"cannot write {path}: {reason}; {fix}")

    @property
    def disk_fault(self) -> bool:
        """The disk failed us (full, read-only, I/O error), rather than a bad path given."""
        return self.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, None)


class RunLocked(Exception):
    """Another process is writing this run directory."""

    def __init__(self, root: Path, pid: str) -> None:
        self.root, self.pid = root, pid
        super().__init__(
            f"{root} is being written by another sweep (PID {pid or 'unknown'}); wait for it "
            "to finish, or use another run_id")


def _reason(e: BaseException) -> str:
    """The OS's words, with the path component that failed when it is not the file itself
    (`File exists (results/afile)`: a file where a directory belongs)."""
    if isinstance(e, OSError) and e.strerror:
        where = isinstance(e, FileExistsError | NotADirectoryError) and e.filename
        return e.strerror + (f" ({e.filename})" if where else "")
    return str(e) or type(e).__name__


def _write_error(path: Path, e: BaseException) -> ResultsWriteError:
    return ResultsWriteError(path, _reason(e), errno_=getattr(e, "errno", None))


def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        _discard(tmp)
        raise _write_error(path, e) from e


def _discard(tmp: Path) -> None:
    """Remove a temp file a failed write left (best effort: the disk may be gone)."""
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


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


_HELD_LOCKS: dict[str, int] = {}  # run directory -> lock fd, held for the process's life


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def open(cls, results_dir: str | Path, run_id: str) -> RunDir:
        """The run directory `results_dir/run_id`, created. `run_id` must be a plain name
        (`run_id_problem`), so the directory is always inside results_dir."""
        problem = run_id_problem(run_id)
        if problem:
            raise ValueError(problem)
        root = Path(results_dir) / run_id
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _write_error(root, e) from e
        return cls(root)

    def lock(self) -> None:
        """Make this process the only writer of the run directory, until it exits.

        Two sweeps on one run would both measure every pending point and interleave their
        records. The lock is an flock on `.lock` (released by the kernel when the process dies,
        even by SIGKILL); it is reentrant within a process, because a Hydra -m multirun runs
        its jobs one after another in one process. Raises RunLocked naming the holder's PID.
        """
        key = str(self.root.resolve())
        if key in _HELD_LOCKS:
            return
        path = self.root / LOCK_FILE
        try:
            # held read-only: flock needs no write access, and an fd open for writing would
            # keep the file system from being remounted read-only under us
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        except OSError as e:
            raise _write_error(path, e) from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise RunLocked(self.root, holder) from None
            raise _write_error(path, e) from e
        with contextlib.suppress(OSError):  # without the PID only the message is poorer
            path.write_text(f"{os.getpid()}\n")
        _HELD_LOCKS[key] = fd

    # provenance ---------------------------------------------------------------------------
    def write_provenance(self, repo: Path, argv: list[str]) -> dict[str, Any]:
        path = self.root / "run.json"
        prov: dict[str, Any] = {}
        try:
            if path.is_file():
                prov = _read_provenance(path)
        except OSError as e:
            raise _write_error(path, e) from e
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
        atomic_write(self.root / "configs" / f"{safe_name(job)}.yaml", yaml_text.encode())

    # points ---------------------------------------------------------------------------
    @property
    def points_path(self) -> Path:
        return self.root / POINTS_FILE

    def append_point(self, point: dict[str, Any]) -> None:
        """Append one line. A short write is continued until the line is whole; a write that
        fails is rolled back (truncated to the old size) where the disk still allows, and
        raised as ResultsWriteError. A torn line left by an earlier killed writer is ended
        first, so this line never merges with it. A point already in the file (a failed point
        measured again on resume, or --fresh) replaces its line instead: the file is rewritten
        atomically, so every reader sees each point once."""
        line = dumps(point) + b"\n"
        path = self.points_path
        if self._replace_point(str(point.get("point_id")), line):
            return
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise _write_error(path, e) from e
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            try:
                _write_all(fd, line)
                os.fsync(fd)
            except OSError as e:
                # roll back; where even that fails, read_points skips and counts the tail
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise _write_error(path, e) from e
        finally:
            os.close(fd)

    def _replace_point(self, point_id: str, line: bytes) -> bool:
        """Rewrite points.jsonl with `line` where `point_id`'s line was (every other line kept
        byte for byte, torn ones too); False when the point is not in the file yet."""
        path = self.points_path
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return False
        except OSError as e:
            raise _write_error(path, e) from e
        if dumps({"point_id": point_id})[1:-1] not in data:  # orjson: no spaces, one spelling
            return False
        out: list[bytes] = []
        placed = False
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            objs, _ = parse_line(raw)
            if not any(str(o.get("point_id")) == point_id for o in objs):
                out.append(raw + b"\n")
                continue
            # this line held the point (maybe glued to another): the others stay, as lines
            out += [dumps(o) + b"\n" for o in objs if str(o.get("point_id")) != point_id]
            if not placed:
                out.append(line)
                placed = True
        if not placed:
            return False
        atomic_write(path, b"".join(out))
        return True

    def points(self) -> list[dict[str, Any]]:
        return read_points(self.root)

    def amend_points(self, ids: set[str], amend: Any) -> int:
        """Rewrite the lines of points `ids` through `amend(line) -> line` (a check that ran
        after them adds its verdict), the file replaced whole: every other line is kept as it
        was read. Returns how many were amended."""
        lines, n = [], 0
        for line in read_points(self.root):
            if line.get("point_id") in ids:
                line, n = amend(line), n + 1
            lines.append(line)
        if n:
            atomic_write(self.points_path, b"".join(dumps(x) + b"\n" for x in lines))
        return n

    def completed_ids(self) -> set[str]:
        """Points that need no re-measuring: status ok. A failed point is measured again."""
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
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, path)
        except (OSError, pa.ArrowException) as e:
            _discard(tmp)
            raise _write_error(path, e) from e
        return path

    def read_requests(self, point_id: str) -> Any:
        import pandas as pd

        return pd.read_parquet(self.root / "requests" / f"{point_id}.parquet")

    def write_json(self, rel: str, obj: Any) -> None:
        atomic_write(self.root / rel, dumps(obj))

    def server_log(self, launch_id: str) -> Path:
        return self.root / "servers" / f"{safe_name(launch_id)}.log"


def _read_provenance(path: Path) -> dict[str, Any]:
    """run.json, or {} when it cannot be parsed: the unreadable one is kept beside it
    (run.json.unreadable.<time>) rather than overwritten, and the sweep goes on."""
    try:
        prov = json.loads(path.read_bytes())
        if isinstance(prov, dict) and isinstance(prov.get("invocations", []), list):
            return prov
    except ValueError:
        pass
    os.replace(path, path.with_name(f"run.json.unreadable.{int(time.time())}"))
    log.warning("%s was unreadable; kept it as run.json.unreadable.*", path)
    return {}


def _write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (a signal, a nearly full disk): keep going."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.ENOSPC, "write wrote nothing (no space left on device?)")
        view = view[n:]
