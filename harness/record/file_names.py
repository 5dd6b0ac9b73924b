"""File names made from run, job and point names."""

from __future__ import annotations

import re


def safe_name(text: str) -> str:
    """`text` made usable as one file name: anything but [A-Za-z0-9._-] becomes '_', and a
    leading dot too (no hidden files, no '..')."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", text)
    return re.sub(r"^\.", "_", out) or "_"
