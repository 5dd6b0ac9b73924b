"""`harness sweep` around Hydra: where its run may go, checked before Hydra starts, and the
lines it ends with (README, Exit codes): 4 when results cannot be written from the start, 5 when
every point failed, the "points kept" line when interrupted."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.config.errors import ConfigError

ALL_FAILED = 5  # the run ended, but every one of its points failed


def override(argv: list[str], key: str) -> str | None:
    """The last command-line override of a plain setting (`key=v`, `+key=v`, `++key=v`)."""
    found = None
    for a in argv:
        k, eq, _ = a.partition("=")
        if eq and k.lstrip("+") == key:
            found = a
    return found


def check_sweep_location(argv: list[str]) -> None:
    """run_id and results_dir from the command line, checked before Hydra starts: Hydra makes
    its output directory `results_dir/run_id/hydra` before our app runs, so a bad run_id
    (`../x`, `latest`) would already have written outside results/."""
    from harness.config.run_id import check_run_location
    from harness.config.validate import PRIMARY_CONFIG

    run_arg, dir_arg = override(argv, "run_id"), override(argv, "results_dir")
    results_dir = dir_arg.partition("=")[2] if dir_arg else "results"

    def where(key: str) -> str:
        arg = run_arg if key == "run_id" else dir_arg
        return f"the command-line override '{arg.lstrip('+')}'" if arg else PRIMARY_CONFIG

    if run_arg is None:
        return
    for run_id in run_arg.partition("=")[2].split(","):  # a -m sweep may list several
        try:
            check_run_location(results_dir, run_id, where)
        except ConfigError as e:
            refused = unwritable(results_dir) if e.key == "results_dir" else None
            if refused is not None:
                raise refused from None
            raise


RESULTS_UNWRITABLE = 4  # README, Exit codes: results could not be written (disk full, read-only)


class ResultsUnwritable(Exception):
    """results_dir cannot be written from the start: the README's exit 4, not bad input (2)."""


def unwritable(results_dir: str) -> ResultsUnwritable | None:
    """The nearest existing directory on the way to results_dir, when nothing may be written in
    it (a read-only mount, or a directory without write permission)."""
    probe = Path(results_dir or ".")
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or os.access(probe, os.W_OK | os.X_OK):
        return None
    read_only_fs = bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
    reason = "read-only file system" if read_only_fs else "no write permission"
    return ResultsUnwritable(
        f"cannot write results under {probe}: {reason}; nothing was started. Fix: point "
        f"results_dir at a writable directory (e.g. results_dir=results) or "
        f"{'remount it read-write' if read_only_fs else 'make it writable'}, then rerun")


def sweep_status() -> int:
    """0 when the run has a point that did not fail, else 5: every point of the run failed
    (the engine died or hung on each, or no request succeeded), so nothing usable was
    measured although the sweep itself ran to the end."""
    sweep_app = sys.modules.get("harness.sweep.app")
    current = getattr(sweep_app, "current_run", None)
    if sweep_app is None or current is None:
        return 0  # --help, or nothing opened
    run, run_id = current
    points = sweep_app.read_points(run.root)
    if points and all(p.get("status") == "failed" for p in points):
        print(all_failed_message(run.root, run_id, len(points)), file=sys.stderr, flush=True)
        return ALL_FAILED
    return 0


def all_failed_message(root: Path, run_id: str, n: int) -> str:
    """Where to look and how to go on (README, Exit codes). An attached engine
    (`engine=endpoint`, a recipe's engine.url) was launched by nobody here, so servers/ holds
    no log of it: the line says to read the server's own logs instead of pointing at nothing."""
    logs = sorted(Path(root, "servers").glob("*.log"))
    where = (f"the engine logs in {root}/servers/" if logs else
             "the attached server's own logs (it was not launched here, so servers/ has none)")
    return (f"harness: every point of {root} failed ({n}); see invalid_reasons in "
            f"{root}/points.jsonl and {where}; rerun with run_id={run_id} to measure them "
            "again")


def interrupted_message() -> str:
    """What a Ctrl-C kept, and how to go on from there."""
    sweep_app = sys.modules.get("harness.sweep.app")
    current = getattr(sweep_app, "current_run", None)
    if sweep_app is None or current is None:
        return "interrupted before the run directory was opened: nothing was measured"
    run, run_id = current
    points_on_disk = sweep_app.points_on_disk
    return (f"interrupted: {points_on_disk(run)} points kept in {run.root}; rerun with "
            f"run_id={run_id} to resume")
