"""Reading points.jsonl: the last line per point wins, torn lines are skipped and counted, and
a complete object glued behind a torn one is still recovered (harness/record/results.py writes
it)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("harness")

POINTS_FILE = "points.jsonl"


def read_points(run_dir: Path) -> list[dict[str, Any]]:
    """Every point of a run, the last line per point_id winning (a redone point supersedes
    its failed attempt). Unreadable lines are skipped and counted in a warning."""
    points, unreadable = read_points_counted(run_dir)
    if unreadable:
        log.warning("%s: %d unreadable line(s) skipped (torn writes); their points count as "
                    "not done and are re-measured on resume", Path(run_dir) / POINTS_FILE,
                    unreadable)
    return points


def read_points_counted(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """(points as read_points returns them, how many lines could not be read)."""
    path = Path(run_dir) / POINTS_FILE
    if not path.is_file():
        return [], 0
    latest: dict[str, dict[str, Any]] = {}
    unreadable = 0
    for line in path.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        objs, torn = parse_line(line)
        unreadable += torn
        for p in objs:
            latest[str(p.get("point_id", len(latest)))] = p
    return list(latest.values()), unreadable


def parse_line(line: bytes) -> tuple[list[dict[str, Any]], int]:
    """The objects in one line and the number of torn pieces. A line is normally one object;
    a torn write can leave a piece of one glued to the next (`{"a": 1, "b{"point_id"...}`,
    or `...}{...`): every complete object is recovered, each torn piece counted once."""
    obj = _loads(line)
    if obj is not None:
        return [obj], 0
    found: list[dict[str, Any]] = []
    torn = 0
    pieces = [p if i == 0 else b"{" + p for i, p in enumerate(line.split(b"}{"))]
    pieces = [p + b"}" if i < len(pieces) - 1 else p for i, p in enumerate(pieces)]
    for piece in pieces:
        obj = _loads(piece) or _trailing_object(piece)
        if obj is None:
            torn += 1
            continue
        found.append(obj)
        if not piece.startswith(b"{") or _loads(piece) is None:
            torn += 1  # a complete object after a torn start: the start is lost
    return found, torn


def _trailing_object(piece: bytes) -> dict[str, Any] | None:
    """The last complete object in `piece` that starts at a `{"` after a torn start."""
    start = piece.find(b'{"', 1)
    while start != -1:
        obj = _loads(piece[start:])
        if obj is not None:
            return obj
        start = piece.find(b'{"', start + 1)
    return None


def _loads(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
