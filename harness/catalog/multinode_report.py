"""IMPORT_REPORT.md for the multi-node capture: per model, the keys and rows captured, and
every row not captured with its reason (harness/catalog/multinode_capture.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from harness.catalog.multinode import AGENTIC_SCENARIO, MODEL_RECIPE, pool, scenario_rows
from harness.catalog.multinode_gpus import note


def read_recipes(out: Path, masters: dict[str, dict[str, Any]], skip: list[str]
                 ) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[tuple[str, int], str]]:
    """Each shipped row's deployment or not_captured reason, for the keys not in `skip`
    (a capture of some keys reports the others as their recipe files stand)."""
    deps: dict[tuple[str, int], dict[str, Any]] = {}
    missed: dict[tuple[str, int], str] = {}
    for master in masters.values():
        for key, e in master.items():
            f = out / f"{key}.yaml"
            if not (isinstance(e, dict) and e.get("multinode")) or key in skip or \
                    not f.exists():
                continue
            for i, row in enumerate((yaml.safe_load(f.read_text()) or {})["search_space"]):
                if row.get("deployment"):
                    deps[(key, i)] = row["deployment"]
                elif row.get("not_captured"):
                    missed[(key, i)] = row["not_captured"]
    return deps, missed


def _read_as_deployed(masters: dict[str, dict[str, Any]],
                      deps: dict[tuple[str, int], dict[str, Any]]) -> list[str]:
    """The rows whose pools are read as srt-slurm deploys them, one line each."""
    lines = []
    for master in masters.values():
        for key, e in master.items():
            if not (isinstance(e, dict) and e.get("multinode")):
                continue
            for i, (scenario, row) in enumerate(scenario_rows(e, key)):
                if (key, i) in deps:
                    text = note(pool(row["prefill"]), pool(row["decode"]), deps[(key, i)],
                                scenario == AGENTIC_SCENARIO)
                    if text:
                        lines.append(f"- `{key}` row {i}: {text}")
    return sorted(lines)


def write(path: Path, masters: dict[str, dict[str, Any]], commit: str,
          deps: dict[tuple[str, int], dict[str, Any]], missed: dict[tuple[str, int], str],
          restricted: list[str] | None = None) -> None:
    per_model: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)
    for master in masters.values():
        for key, e in master.items():
            if not (isinstance(e, dict) and e.get("multinode")):
                continue
            n = len(scenario_rows(e, key))
            got = sum(1 for i in range(n) if (key, i) in deps)
            per_model[str(e["model-prefix"])].append((key, n, got, str(e["framework"])))
    lines = [
        "# Multi-node keys: per-role launch capture",
        "",
        f"From SemiAnalysisAI/InferenceX@{commit} (configs/nvidia-master.yaml, "
        "configs/amd-master.yaml) and NVIDIA/srt-slurm at each launcher's checkout, by "
        "`python -m harness.catalog.multinode_capture` (docs/multinode.md, \"Multi-node keys: "
        "what is captured\"). A captured row has a `deployment:` block and launches on Slurm "
        "(the recipe's engine is then multinode); the others keep their pools and "
        "`deploy_recipe`, and their `not_captured` gives the reason below.",
        "",
    ]
    if restricted:
        lines += [f"This run captured only: {', '.join(sorted(restricted))}.", ""]
    tk = tr = ck = cr = 0
    lines += ["| model | keys | keys with a captured row | rows | rows captured |",
              "|---|---|---|---|---|"]
    for model in sorted(per_model):
        ks = per_model[model]
        k_all, k_got = len(ks), sum(1 for _, _, g, _ in ks if g)
        r_all, r_got = sum(n for _, n, _, _ in ks), sum(g for _, _, g, _ in ks)
        tk, ck, tr, cr = tk + k_all, ck + k_got, tr + r_all, cr + r_got
        lines.append(f"| {model} ({MODEL_RECIPE.get(model, '?')}) | {k_all} | {k_got} | "
                     f"{r_all} | {r_got} |")
    lines += [f"| **all** | {tk} | {ck} | {tr} | {cr} |", ""]
    odd = _read_as_deployed(masters, deps)
    if odd:
        lines += ["## Rows whose GPUs are read as srt-slurm deploys them", "",
                  "The master row writes a data-parallel-attention pool with vLLM's per-rank "
                  "`tp`; the harness counts throughput per GPU over every GPU srt-slurm "
                  "deploys (docs/multinode.md, \"GPUs of a captured row\"). Each row's recipe "
                  "says so in a comment above it.", "", *odd, ""]
    lines += ["## Keys", ""]
    for model in sorted(per_model):
        lines += [f"### {model}", ""]
        for key, n, got, fw in sorted(per_model[model]):
            lines.append(f"- `{key}` ({fw}): {got}/{n} rows captured")
            reasons: dict[str, list[int]] = defaultdict(list)
            for i in range(n):
                if (key, i) in missed:
                    reasons[missed[(key, i)]].append(i)
                elif (key, i) not in deps:
                    reasons["not attempted in this run"].append(i)
            for why, rows in reasons.items():
                lines.append(f"  - rows {', '.join(map(str, rows))}: {why}")
        lines.append("")
    path.write_text("\n".join(lines))
