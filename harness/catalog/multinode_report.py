"""IMPORT_REPORT.md for the multi-node capture: per model, the keys and rows captured, and
every row not captured with its reason (harness/catalog/multinode_capture.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.catalog.multinode import MODEL_RECIPE, scenario_rows


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
    lines += [f"| **all** | {tk} | {ck} | {tr} | {cr} |", "", "## Keys", ""]
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
