"""Where a run goes: what may name a run directory (`run_id`) and whether `results_dir` can take
it. Checked while the config is validated, before anything starts, and again where a run
directory is opened (harness.record.results)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from harness.config.errors import ConfigError

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
RESERVED_RUN_IDS = ("latest",)


def run_id_problem(run_id: str) -> str | None:
    """Why `run_id` cannot name a run directory, or None when it can."""
    if run_id in RESERVED_RUN_IDS:
        return f"run_id {run_id!r} is reserved (results/{run_id} points at the newest run)"
    if not RUN_ID_PATTERN.match(run_id):
        return (f"run_id {run_id!r} is not a plain name (letters, digits, '.', '_', '-'; "
                "starting with a letter or digit; at most 128 characters)")
    return None


def results_dir_problem(results_dir: str, run_id: str = "") -> str | None:
    """Why results_dir (and the run directory in it) cannot be written, or None. No side
    effects: nothing is created before the whole config is known good."""
    target = Path(results_dir or ".")
    run = target / run_id if run_id else None
    if run is not None and (run.exists() or run.is_symlink()) and not run.is_dir():
        return f"{run} exists and is not a directory"
    probe = target
    while not probe.exists():  # the nearest existing ancestor is where mkdir will write
        if probe.is_symlink():
            return f"{probe} is a dangling symlink"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable (read-only file system or permissions)"
    return None


def check_run_location(results_dir: str, run_id: str, where: Callable[[str], str]) -> None:
    """run_id names one directory inside results_dir, and results_dir must be writable."""
    problem = run_id_problem(run_id)
    if problem:
        raise ConfigError.at(where, "run_id", problem,
                             "give a plain name, e.g. run_id=20261201-093000 (it names "
                             f"{results_dir}/<run_id>/), or leave run_id out for a timestamp")
    problem = results_dir_problem(results_dir, run_id)
    if problem:
        raise ConfigError.at(where, "results_dir", problem,
                             "point results_dir at a writable directory (e.g. results_dir=results)"
                             " or free/remount the one given")
