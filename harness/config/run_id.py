"""What may name a run directory (`run_id`): checked while the config is validated, before
anything starts, and again where a run directory is opened (harness.record.results)."""

from __future__ import annotations

import re

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
