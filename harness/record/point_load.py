"""Points read back from run directories as records of the current schema (what exports,
curves, tables and pages read). Apart from point_record so that the record type does not
import the results directory that imports it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.record.point_record import PointRecord
from harness.record.results import read_points


def load_records(run_dirs: Iterable[Path]) -> list[PointRecord]:
    """Every point of the given run directories, migrated to the current schema."""
    out: list[PointRecord] = []
    for d in map(Path, run_dirs):
        if not (d / "points.jsonl").is_file():
            raise FileNotFoundError(
                f"{d}: no points.jsonl here (is it a run directory, results/<run_id>?)")
        for n, line in enumerate(read_points(d), 1):
            try:
                out.append(PointRecord.from_flat(line))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{d / 'points.jsonl'}: point {n} "
                                 f"({line.get('point_id', '?')}): {e}") from None
    return out


def load_flat(run_dirs: Iterable[Path]) -> list[dict[str, Any]]:
    """Points as flat dicts in the current schema (what curves, tables and pages read)."""
    return [r.flat() for r in load_records(run_dirs)]
