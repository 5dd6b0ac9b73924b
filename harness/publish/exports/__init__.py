"""Exports of a run directory in other tools' formats, so their own post-processing reads our
points: `harness export inferencex RUN_DIR --out DIR`.

Per fixed-sequence point, InferenceX's client result `<RESULT_FILENAME>.json` and the
environment its `utils/process_result.py` reads (`inferencex_fixed`); per agentic point,
AIPerf's artifacts under `<RESULT_FILENAME>/aiperf_artifacts/` and the environment of
InferenceX's `process_agentic_result.py` (`aiperf_agentic`). With a point's `.env` loaded
(`set -a; . DIR/<name>.env`), their scripts run unchanged in DIR.

Only valid points are exported by default: InferenceX's pipeline has no notion of validity, so a
point we rejected would become a published number there. Each point left out is named
with its reasons in the result. With `include_invalid`, invalid points are exported too, marked
in the file name (`_INVALID` appended to RESULT_FILENAME) and in the files (`harness_valid` in
the JSON, `metadata.submission_valid` in the AIPerf aggregate), each reported as a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.publish.exports import aiperf_agentic, inferencex_fixed
from harness.record.point_load import load_records
from harness.record.point_record import PointRecord


class ExportError(ValueError):
    """The run directory cannot be exported; the message names the fix."""


@dataclass
class ExportResult:
    files: list[Path] = field(default_factory=list)
    fixed: int = 0
    agentic: int = 0
    warnings: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # invalid points not exported, with why


def load_run(run_dir: Path) -> list[PointRecord]:
    if not run_dir.is_dir():
        raise ExportError(f"{run_dir}: no such directory; give a run directory "
                          "(results/<run_id>, as `harness sweep` prints)")
    if not (run_dir / "points.jsonl").is_file():
        raise ExportError(f"{run_dir}: not a run directory (no points.jsonl); give "
                          "results/<run_id>, as `harness sweep` prints")
    try:
        records = load_records([run_dir])
    except ValueError as e:
        raise ExportError(str(e).splitlines()[0]) from None
    if not records:
        raise ExportError(f"{run_dir}: the run has no points yet; run `harness sweep "
                          f"run_id={run_dir.name}` to measure them")
    return records


INVALID_SUFFIX = "_INVALID"


def _why(rec: PointRecord) -> str:
    i = rec.identity
    why = "; ".join(r.splitlines()[0] for r in rec.reasons) or rec.status
    # an open-loop point's load is its rate; its conc is the in-flight cap (0: none)
    load = f"conc {i.conc}" if i.rate is None else f"rate {i.rate:g} req/s"
    return f"point {rec.point_id} ({i.scenario}, {load}): {why}"


def invalid_warning(rec: PointRecord) -> str:
    return f"invalid, exported anyway ({INVALID_SUFFIX} in its name): {_why(rec)}"


def export_inferencex(run_dir: Path, out: Path, include_invalid: bool = False) -> ExportResult:
    """The valid points of `run_dir` (every point with `include_invalid`) into `out`
    (created); raises ExportError for a run that cannot be exported,
    harness.record.results.ResultsWriteError for a write that failed."""
    run_dir, out = Path(run_dir), Path(out)
    records = load_run(run_dir)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out}: a file, not a directory; give --out a directory to write "
                          "into (it is created)")
    names = inferencex_fixed.result_filenames(records)
    result = ExportResult()
    for rec in records:
        name = names[rec.point_id]
        if not rec.valid:
            if not include_invalid:
                result.left_out.append(_why(rec))
                continue
            name += INVALID_SUFFIX
        if rec.traits.has_sessions:  # AIPerf's agentic artifacts; InferenceX's JSON else
            try:
                result.files += aiperf_agentic.export_point(run_dir, rec, name, out)
            except aiperf_agentic.ArtifactError as e:
                raise ExportError(str(e)) from None
            result.agentic += 1
        else:
            result.files += inferencex_fixed.export_point(run_dir, rec, name, out)
            result.fixed += 1
        if not rec.valid:
            result.warnings.append(invalid_warning(rec))
    return result
