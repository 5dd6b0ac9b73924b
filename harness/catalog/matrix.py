"""A single-node master key expanded to its jobs by upstream's matrix generator's rules
(utils/matrix_logic/generate_sweep_configs.py@843c6254 generate_full_sweep, no filters):

- concurrency: a row's `conc-list`, else `conc-start` doubling (step 2) up to `conc-end`, the
  last value clamped to `conc-end`;
- one job per concurrency (single-node, fixed and agentic alike);
- fixed-seq-len: `max-model-len` = ISL + OSL + 256, `exp-name` = `<model-prefix>_<1k1k|8k1k>`;
- agentic-coding: duration 3,600 s (validation.py DEFAULT_AGENTIC_DURATION_SECONDS), the DRAM
  budget `total-cpu-dram-gb` from the scenario's `dram-utilization` and the runner's hardware
  (agentic_dram_offload_gb), `exp-name` = `<prefix>_tp<TP>_conc<C>_<kvnone|kvdram-NAME>[_spec-X]`.

Jobs are dicts with upstream's field names, as the generator emits them for the workflow."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from harness.catalog.masters import MasterKey

STEP = 2
DEFAULT_AGENTIC_DURATION_S = 3600
MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB = 2_861_022
BYTES_PER_MIB = 1024 * 1024
BYTES_PER_GB = 1_000_000_000
SEQ_NAMES = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}


def concurrencies(row: dict[str, Any]) -> list[int]:
    if row.get("conc-list"):
        return [int(c) for c in row["conc-list"]]
    start, end = int(row["conc-start"]), int(row["conc-end"])
    out, c = [], start
    while c <= end:
        out.append(c)
        if c == end:
            break
        c = min(c * STEP, end)
    return out


def dram_budget_gb(scenario: dict[str, Any], row: dict[str, Any], runner: str,
                   runners: dict[str, Any]) -> int:
    """agentic_dram_offload_gb for a single-node row: the node's available CPU DRAM (capped at
    3 TB) x dram-utilization x the share of the node's GPUs the row uses."""
    if row.get("kv-offloading", "none") != "dram":
        return 0
    hw = runners.get("hardware", {}).get(runner, {})
    if "available-cpu-dram-mib" not in hw or "gpus-per-node" not in hw:
        raise ValueError(f"runner {runner!r} has no hardware entry in configs/runners.yaml "
                         f"(available-cpu-dram-mib, gpus-per-node)")
    available = min(int(hw["available-cpu-dram-mib"]), MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB)
    gpus = int(row["tp"]) * int(row.get("pp", 1)) * int(row.get("pcp-size", 1))
    utilization = Decimal(str(scenario["dram-utilization"]))
    share = Decimal(available) * BYTES_PER_MIB * utilization * gpus / int(hw["gpus-per-node"])
    return int(share / BYTES_PER_GB)


def _common(mk: MasterKey, row: dict[str, Any]) -> dict[str, Any]:
    e = mk.entry
    job = {"image": e["image"], "model": e["model"], "model-prefix": e["model-prefix"],
           "precision": e["precision"], "framework": e["framework"], "runner": e["runner"],
           "tp": row["tp"], "pp": row.get("pp", 1), "dcp-size": row.get("dcp-size", 1),
           "pcp-size": row.get("pcp-size", 1), "ep": row.get("ep", 1) if row.get("ep") is not None
           else 1, "dp-attn": row.get("dp-attn", False) if row.get("dp-attn") is not None
           else False, "spec-decoding": row.get("spec-decoding", "none")}
    for field in ("router", "kv-p2p-transfer"):  # component_metadata: row over key
        value = row.get(field, e.get(field))
        if value is not None:
            job[field] = value
    return job


def expand(mk: MasterKey, runners: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(row, job) for every job of a single-node key, in the generator's order."""
    if mk.kind == "multinode":
        raise ValueError(f"{mk.key}: multi-node keys are not expanded to single-node jobs")
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    scenarios = mk.entry["scenarios"]
    for seq in scenarios.get("fixed-seq-len", []) or []:
        isl, osl = int(seq["isl"]), int(seq["osl"])
        for row in seq["search-space"]:
            for conc in concurrencies(row):
                job = {**_common(mk, row), "isl": isl, "osl": osl, "conc": conc,
                       "max-model-len": isl + osl + 256,
                       "exp-name": f"{mk.entry['model-prefix']}_{SEQ_NAMES.get((isl, osl))}",
                       "disagg": mk.entry.get("disagg", False), "run-eval": False}
                out.append((row, job))
    for scenario in scenarios.get("agentic-coding", []) or []:
        for row in scenario["search-space"]:
            backend = row.get("kv-offload-backend")
            offload = row["kv-offloading"]
            suffix = "kvnone" if offload == "none" else f"kv{offload}-{backend['name']}"
            budget = dram_budget_gb(scenario, row, mk.runner, runners)
            for conc in concurrencies(row):
                job = {**_common(mk, row), "conc": conc, "kv-offloading": offload,
                       "total-cpu-dram-gb": budget, "duration": DEFAULT_AGENTIC_DURATION_S,
                       "scenario-type": "agentic-coding"}
                spec = job["spec-decoding"]
                job["exp-name"] = (f"{mk.entry['model-prefix']}_tp{row['tp']}_conc{conc}_{suffix}"
                                   + (f"_spec-{spec}" if spec != "none" else ""))
                if backend is not None:
                    job["kv-offload-backend"] = backend
                out.append((row, job))
    return out
