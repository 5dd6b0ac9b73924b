"""`harness ingest-inferencex`: InferenceX dashboard rows -> a run directory of our points.

Rows in the format of `GET /api/v1/benchmarks` (scenarios/reference/dsr1_b200_rows.json):
config fields at the top, `metrics` in seconds and tok/s with the same keys as ours. Cost and
power columns come from our chip recipes (all three price tiers, the dashboard picks one), so
their points and ours land in one dashboard, one table, one gate.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import yaml

from harness.config.validate import repo_root
from harness.results import RunDir, atomic_write, dumps

MODELS = {"dsr1": "deepseek-r1", "gptoss": "gpt-oss-120b", "llama70b": "llama-3.3-70b"}
ENGINES = {"trt": "trtllm", "sglang": "sglang", "vllm": "vllm", "atom": "atom"}
SHAPES = {(1024, 1024): "fixed-1k1k", (1024, 8192): "fixed-1k8k", (8192, 1024): "fixed-8k1k"}
REQUIRED = ("hardware", "framework", "model", "precision", "isl", "osl", "conc", "metrics")


class IngestError(ValueError):
    pass


def chip_constants(chip: str) -> dict[str, Any]:
    path = repo_root() / "recipes" / "chip" / f"{chip}.yaml"
    if not path.is_file():
        raise IngestError(f"no chip recipe for {chip!r} (looked for {path}); add one to "
                          "recipes/chip/ to get cost and power columns")
    c = yaml.safe_load(path.read_text())
    tiers = c["cost_per_gpu_hr"]
    return {"chip_tdp_w": c.get("tdp_w"), "chip_power_kw_all_in": c["power_kw_all_in"],
            "chip_cost_hyperscaler": tiers["hyperscaler"],
            "chip_cost_neocloud": tiers["neocloud"], "chip_cost_rental_3yr": tiers["rental_3yr"]}


def gpu_count(row: dict[str, Any]) -> int:
    """Single node: the TP size (old rows report num_prefill_gpu as tp*ep); disaggregated:
    prefill + decode GPUs."""
    if row.get("disagg") or row.get("is_multinode"):
        return int(row.get("num_prefill_gpu", 0)) + int(row.get("num_decode_gpu", 0))
    return int(row.get("decode_tp") or row.get("prefill_tp") or 1)


def to_point(row: dict[str, Any], n: int, source: str, run_id: str) -> dict[str, Any]:
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise IngestError(f"{source}: row {n} lacks {missing}; is this an InferenceX "
                          "benchmarks export?")
    m = row["metrics"]
    if not isinstance(m, dict) or "tput_per_gpu" not in m:
        raise IngestError(f"{source}: row {n} has no metrics.tput_per_gpu")
    isl, osl = int(row["isl"]), int(row["osl"])
    spec = row.get("spec_method") or "none"
    identity = {
        "model": MODELS.get(row["model"], row["model"]),
        "precision": row["precision"],
        "chip": row["hardware"],
        "engine": ENGINES.get(row["framework"], row["framework"]),
        "engine_image": row.get("image"),
        "spec_method": spec,
        "tp": int(row.get("decode_tp") or 1),
        "ep": int(row.get("decode_ep") or 1),
        "dp_attention": bool(row.get("decode_dp_attention")),
        "pp": 1,
        "gpus": gpu_count(row),
        "disagg": bool(row.get("disagg")),
        "scenario": SHAPES.get((isl, osl), f"fixed-{isl}x{osl}"),
        "scenario_kind": "fixed",
        "isl": isl, "osl": osl, "conc": int(row["conc"]), "repeat": 0,
    }
    digest = hashlib.sha256(json.dumps([identity, row.get("date"), row.get("run_url")],
                                       sort_keys=True).encode()).hexdigest()[:12]
    point = {
        "point_id": f"c{identity['conc']}-ix-{digest}",
        "run_id": run_id,
        **identity,
        "engine_version": (row.get("image") or "").rsplit(":", 1)[-1] or None,
        "date": row.get("date"),
        "started_at": row.get("date"),
        "source": row.get("run_url") or source,
        "status": "ok",
        "valid": True,
        "invalid_reasons": [],
        **chip_constants(row["hardware"]),
    }
    point.update({k: v for k, v in m.items() if isinstance(v, int | float)})
    return point


def ingest(rows_file: Path, out: Path) -> list[dict[str, Any]]:
    try:
        rows = json.loads(rows_file.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise IngestError(f"{rows_file}: cannot read JSON rows ({e})") from None
    if isinstance(rows, dict):
        rows = rows.get("data") or rows.get("rows") or []
    if not isinstance(rows, list) or not rows:
        raise IngestError(f"{rows_file}: expected a JSON list of benchmark rows")
    run = RunDir.open(out.parent, out.name)
    points = [to_point(r, i, str(rows_file), out.name) for i, r in enumerate(rows)]
    existing = {p["point_id"] for p in run.points()}
    for p in points:
        if p["point_id"] not in existing:
            run.append_point(p)
    atomic_write(run.root / "run.json", dumps({
        "run_id": out.name, "ingested_from": str(rows_file),
        "sha256": hashlib.sha256(rows_file.read_bytes()).hexdigest(),
        "ingested_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rows": len(points),
        "note": "InferenceX published rows; cost/power from recipes/chip",
    }))
    return points
