"""InferenceX's golden acceptance-length files as acceptance-table rows.

Each `golden_al_distribution/<name>.yaml` of an InferenceX checkout is one curve:
`<model key>: {thinking_on|thinking_off: {k: AL}}` under a comment header that names the
sampling, the method (`vLLM MTP|EAGLE3|DSpark`), sometimes the drafter (`draft: X`) and the
speculative-config keys it was measured with (`draft_sample_method=...`,
`rejection_sample_method=...`). A row keeps what the engine ran — model, method, drafter
checkpoint, sample method, k, thinking — so a lookup can tell apart two curves of one method
(MiniMax-M3's EAGLE3 and EAGLE3-GQA drafters; Kimi-K3's greedy and probabilistic DSpark).
`golden_rows` is pure (text in, rows out); `import_golden` is the I/O edge behind
`harness acceptance import-golden DIR`.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import yaml

from harness.speculation.acceptance import COLUMNS, TABLE_DIR, AcceptanceRow, load_table

GOLDEN_KIND = "InferenceX golden AL curve (measured real acceptance; AL=1+accepted/verify)"
REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"

# What a header does not say, per file: the drafter checkpoint each collector passes as the
# speculative-config "model" (InferenceX@843c6254, benchmarks/single_node/speedbench/):
# minimaxm3_fp4_b300_vllm.sh DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3"; the GQA curve's drafter
# is the one every MiniMax-M3 AgentX script injects it for (agentic/minimaxm3_fp4_b300_mtp.sh:
# DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3-GQA", "Golden AL for the GQA draft head");
# kimik2.5_fp4_b300_vllm.sh DRAFT_MODEL="lightseekorg/kimi-k2.5-eagle3-mla". DSV4-Pro-0813's
# DSpark draft ships inside its checkpoint (dsv4dspark_fp4_b300_vllm.sh: no "model" key).
DRAFTERS = {
    "minimaxm3_eagle3.yaml": "Inferact/MiniMax-M3-EAGLE3",
    "minimaxm3_eagle3_gqa.yaml": "Inferact/MiniMax-M3-EAGLE3-GQA",
    "kimik2.5_eagle3.yaml": "lightseekorg/kimi-k2.5-eagle3-mla",
}
# A curve's model key -> (model id of recipes/model/, precision it was measured with).
PRECISION_SUFFIXES = ("-nvfp4", "-fp8", "-fp4", "-mxfp4")


def model_and_precision(key: str) -> tuple[str, str]:
    """`glm-5.2-fp8` -> (`glm-5.2`, `fp8`); `kimi-k3` -> (`kimi-k3`, ``)."""
    for suffix in PRECISION_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)], suffix[1:]
    return key, ""


def sample_method(header: str) -> str:
    """The sample method a curve was measured with, from its `speculative-config:` line:
    vLLM's draft_sample_method defaults to greedy (vllm/config/speculative.py
    DraftSampleMethod, as dsv4dspark_fp4_b300_vllm.sh@843c6254 says), its rejection sampler
    to the standard one."""
    draft = re.search(r"draft_sample_method=(\w+)", header)
    reject = re.search(r"rejection_sample_method=(\w+)", header)
    method = draft.group(1) if draft else "greedy"
    if reject and reject.group(1) not in ("standard", "strict"):
        method += f"-{reject.group(1)}"
    return method


def golden_rows(name: str, text: str, commit: str) -> list[AcceptanceRow]:
    """One row per (thinking mode, k) of golden file `name` at `commit`, in file order."""
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or len(doc) != 1:
        raise ValueError(f"{name}: expected one top-level model key, got {list(doc or {})}")
    (key, curves), = doc.items()
    model, precision = model_and_precision(str(key))
    measured = re.search(r"vLLM ([A-Za-z0-9]+)", header)
    if measured is None:
        raise ValueError(f"{name}: no 'vLLM <METHOD>' in the header")
    method = measured.group(1).lower()
    draft = re.search(r"draft: ([\w./-]+)\)", header)
    drafter = draft.group(1) if draft else DRAFTERS.get(name, "")
    run = re.search(r"actions/runs/(\d+)", header)
    dataset_line = re.search(r"# dataset: (.*)", header)
    dataset = "SPEED-Bench Qualitative, coding category (80 prompts), output_len 4096"
    rows = []
    for mode, by_k in curves.items():
        thinking = {"thinking_on": "on", "thinking_off": "off"}[mode]
        sampling = _sampling(header, mode, dataset_line.group(1) if dataset_line else "")
        for k, al in by_k.items():
            rows.append(AcceptanceRow(
                model=model, speculator=method, k=int(k), thinking=thinking,
                al=round(float(al), 2), precision=precision, draft=drafter,
                sample_method=sample_method(header), dataset=dataset, sampling=sampling,
                engine="vLLM, B300",
                source=f"{REPO_URL}/blob/{commit}/golden_al_distribution/{name}",
                source_kind=GOLDEN_KIND,
                notes=f"golden_al_distribution/{name}@{commit[:8]}"
                      + (f"; InferenceX actions/runs/{run.group(1)}" if run else "")))
    return rows


def _sampling(header: str, mode: str, dataset_line: str) -> str:
    """The sampling a mode was measured with: the per-mode header line when there is one
    (`# thinking_on: temperature=1.0, chat_template_kwargs: ...`), else the dataset line's
    sampling fields and the mode's chat_template_kwargs line."""
    own = re.search(rf"# {mode}\s*:\s*(.*)", header)
    kwargs = re.search(rf"# {mode} chat_template_kwargs: (.*)", header)
    shared = " | ".join(p.strip() for p in dataset_line.split("|")[1:]  # [0]: the dataset
                        if not p.strip().startswith("output_len"))
    if own:
        return own.group(1).strip()
    return "; ".join(x for x in (shared, f"chat_template_kwargs {kwargs.group(1)}"
                                 if kwargs else "") if x)


def replace_golden(rows: list[AcceptanceRow], golden: list[AcceptanceRow]) -> list[AcceptanceRow]:
    """`rows` with every InferenceX golden row replaced by `golden`, which go first (in file
    order); other published rows keep their order after them."""
    return golden + [r for r in rows if r.source_kind != GOLDEN_KIND]


def import_golden(checkout: Path, commit: str | None = None,
                  table: Path = TABLE_DIR / "published.csv") -> int:
    """`harness acceptance import-golden DIR`: rewrite `table`'s golden rows from DIR's
    golden_al_distribution/*.yaml, each row citing file@commit."""
    folder = checkout / "golden_al_distribution"
    files = sorted(folder.glob("*.yaml"))
    if not files:
        print(f"error: {folder} has no *.yaml (point DIR at an InferenceX checkout)",
              file=sys.stderr)
        return 2
    if commit is None:
        commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    golden = [r for f in files for r in golden_rows(f.name, f.read_text(), commit)]
    kept = [r for r in load_table(table.parent) if r.file.startswith(table.name + ":")]
    rows = replace_golden(kept, golden)
    with table.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows({c: getattr(r, c) for c in COLUMNS} for r in rows)
    print(f"{table}: {len(golden)} golden rows from {len(files)} files at {commit[:12]}, "
          f"{len(rows) - len(golden)} other rows kept")
    return 0
