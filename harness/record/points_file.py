"""Reading points.jsonl: the last line per point wins, torn lines are skipped and counted, and
a complete object glued behind a torn one is still recovered (harness/record/results.py writes
it). A line whose fields have the wrong type (`"conc": "eight"`, hand edits, another tool's
writer) is skipped with a warning naming the file, the line, the field and the fix, and the rest
of the file is read: one bad line costs its own point, never the dashboard or the gate
(`point_types.line_problem` says what a line must hold)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson

from harness.record.point_types import line_problem
from harness.record.spec_names import name_speculators

log = logging.getLogger("harness")

POINTS_FILE = "points.jsonl"
NAMED_BAD_LINES = 3  # lines of the wrong types named one by one per file; the rest counted


def read_points(run_dir: Path) -> list[dict[str, Any]]:
    """Every point of a run, the last line per point_id winning (a redone point supersedes
    its failed attempt). Unreadable lines are skipped and counted in a warning; a line of the
    wrong types is skipped with a warning of its own (file, line, field, fix)."""
    points, unreadable, mistyped = read_points_checked(run_dir)
    path = Path(run_dir) / POINTS_FILE
    if unreadable:
        log.warning("%s: %d unreadable line(s) skipped (torn writes); their points count as "
                    "not done and are re-measured on resume", path, unreadable)
    for where, problem in mistyped[:NAMED_BAD_LINES]:
        log.warning("%s: %s skipped (the other points are read): %s", path, where, problem)
    if len(mistyped) > NAMED_BAD_LINES:
        log.warning("%s: %d more line(s) of the wrong types skipped", path,
                    len(mistyped) - NAMED_BAD_LINES)
    name_speculators(points, Path(run_dir))  # `self_draft`, not its method `draft_model`
    return points


def read_points_counted(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """(points as read_points returns them, how many lines could not be read or typed)."""
    points, unreadable, mistyped = read_points_checked(run_dir)
    return points, unreadable + len(mistyped)


def read_points_checked(run_dir: Path
                        ) -> tuple[list[dict[str, Any]], int, list[tuple[str, str]]]:
    """(points, torn pieces skipped, [(where, problem)] for each line of the wrong types)."""
    path = Path(run_dir) / POINTS_FILE
    if not path.is_file():
        return [], 0, []
    latest: dict[str, dict[str, Any]] = {}
    unreadable = 0
    mistyped: list[tuple[str, str]] = []
    for n, line in enumerate(path.read_bytes().split(b"\n"), 1):
        if not line.strip():
            continue
        objs, torn = parse_line(line)
        unreadable += torn
        for p in objs:
            problem = line_problem(p)
            if problem is not None:
                pid = p.get("point_id")
                where = f"line {n}" + (f" (point {pid})" if isinstance(pid, str) else "")
                mistyped.append((where, problem))
                continue
            latest[str(p.get("point_id", len(latest)))] = p
    return list(latest.values()), unreadable, mistyped


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
