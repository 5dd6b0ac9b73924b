"""The peer tools of benchmarks/parity.py: AIPerf, guidellm, inference-perf, vllm bench serve.

Each reads back the tool's own summary file; what each figure counts is in docs/parity.md.
"""

from __future__ import annotations

from benchmarks.parity_tools import Harness, Tool

TOOLS: dict[str, Tool] = {"harness": Harness()}
