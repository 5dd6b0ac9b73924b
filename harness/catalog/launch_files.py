"""Files a captured launch's script wrote under /workspace/results and its server reads (the
Mooncake store config at $MOONCAKE_CONFIG_PATH: benchmarks/single_node/agentic/
kimik3_fp4_b300_vllm_mtp.sh, minimaxm3_fp8_h{100,200}_mtp.sh@843c6254), as a search-space
row's `files` (EngineConfig.files): the path under /workspace, the captured text with the job's
ports written {port}/{port+N} (the master address is PORT + 12000) and literal braces doubled,
so the engine adapter writes the same file for whatever port a sweep picks
(harness/engines/workspace.py).

Of the other files a server reads, TensorRT-LLM's extra-options YAML is the recipe's
extra_options and a checkout file (a chat template) is read from engine.workspace; both are
left out here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.catalog.port_template import port_sub

RESULTS = "/workspace/results/"


def row_files(c: Mapping[str, Any]) -> dict[str, str] | None:
    """The capture's job-written files by path under /workspace, templated; None: none."""
    port = int((c.get("env_in") or {}).get("PORT", 8888))
    files = (c.get("server") or {}).get("files") or {}
    out = {path.removeprefix("/workspace/"): port_sub(str(text), port)
           for path, text in sorted(files.items()) if path.startswith(RESULTS)}
    return out or None
