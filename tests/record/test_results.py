"""Run directories: atomic files, one line per point, torn lines ignored, resume ids."""

from __future__ import annotations

import math

from harness.record.results import RunDir, read_points
from harness.records import RequestRecord


def test_points_roundtrip_last_line_wins_and_torn_tail_is_ignored(tmp_path) -> None:
    run = RunDir.open(tmp_path, "r1")
    run.append_point({"point_id": "a", "status": "failed", "x": 1.0})
    run.append_point({"point_id": "b", "status": "ok", "x": math.nan})
    run.append_point({"point_id": "a", "status": "ok", "x": 2.0})
    with open(run.points_path, "ab") as f:
        f.write(b'{"point_id": "c", "sta')  # a writer killed mid-line
    pts = {p["point_id"]: p for p in read_points(run.root)}
    assert set(pts) == {"a", "b"}
    assert pts["a"]["x"] == 2.0 and pts["b"]["x"] is None  # NaN is written as null
    assert run.completed_ids() == {"a", "b"}


def test_requests_parquet_keeps_every_record(tmp_path) -> None:
    run = RunDir.open(tmp_path, "r1")
    recs = [RequestRecord(f"q{i}", "warmup" if i < 2 else "measured", 10, 5,
                          chunk_ts=[0.1, 0.2], chunk_tokens=[1, 1], tags={"turn": i})
            for i in range(6)]
    recs[3].error = "HTTP 500: nope"
    run.write_requests("p1", recs)
    df = run.read_requests("p1")
    assert len(df) == 6 and list(df["phase"]).count("warmup") == 2
    assert df.loc[3, "error"].startswith("HTTP 500")
    assert list(df.loc[0, "chunk_ts"]) == [0.1, 0.2]
    assert not list((run.root / "requests").glob(".*tmp"))
