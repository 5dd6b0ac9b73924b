"""`harness ingest-inferencex`: InferenceX dashboard rows -> a run directory of our points.

Rows in the format of `GET /api/v1/benchmarks` (scenarios/reference/dsr1_b200_rows.json):
config fields at the top, `metrics` in seconds and tok/s with the same keys as ours. Cost and
power columns come from our chip recipes (all three price tiers, the dashboard picks one), so
their points and ours land in one dashboard, one table, one gate.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

import yaml

from harness.config.locations import repo_root
from harness.publish.links import web_link
from harness.record.chip_costs import ChipCosts
from harness.record.results import ResultsWriteError, RunDir, RunLocked, atomic_write, dumps

MODELS = {"dsr1": "deepseek-r1", "gptoss": "gpt-oss-120b", "llama70b": "llama-3.3-70b"}
ENGINES = {"trt": "trtllm", "sglang": "sglang", "vllm": "vllm", "atom": "atom"}
SHAPES = {(1024, 1024): "fixed-1k1k", (1024, 8192): "fixed-1k8k", (8192, 1024): "fixed-8k1k"}
REQUIRED = ("hardware", "framework", "model", "precision", "isl", "osl", "conc", "metrics")


class IngestError(ValueError):
    pass


def is_published(p: dict[str, Any]) -> bool:
    """An ingested InferenceX row: `to_point` marks it `published`; older ingests carry only
    their id's "-ix-". Provenance, never a missing field, makes a row published."""
    return bool(p.get("published")) or "-ix-" in str(p.get("point_id", ""))


def known_chips() -> list[str]:
    """The chips with a recipe (recipes/chip/<name>.yaml): the only names a row may use, so
    a row's `hardware` can never name a file elsewhere."""
    return sorted(p.stem for p in (repo_root() / "recipes" / "chip").glob("*.yaml"))


def chip_constants(chip: str) -> dict[str, Any]:
    if chip not in known_chips():
        raise IngestError(f"no chip recipe for {chip!r}; known chips: "
                          f"{', '.join(known_chips())} (add recipes/chip/{chip}.yaml for "
                          "cost and power columns)")
    path = repo_root() / "recipes" / "chip" / f"{chip}.yaml"
    return ChipCosts.of(yaml.safe_load(path.read_text())).columns()


def gpu_count(row: dict[str, Any]) -> int:
    """Single node: the TP size (old rows report num_prefill_gpu as tp*ep); disaggregated:
    prefill + decode GPUs."""
    if row.get("disagg") or row.get("is_multinode"):
        return int(row.get("num_prefill_gpu", 0)) + int(row.get("num_decode_gpu", 0))
    return int(row.get("decode_tp") or row.get("prefill_tp") or 1)


def _positive_int(row: dict[str, Any], key: str, bad: Any) -> int:
    v = row[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
            or v != int(v) or v < 1:
        raise bad(f"'{key}' must be a positive integer, got {v!r}")
    return int(v)


def check_row(row: Any, n: int, source: str) -> None:
    """Every field the point is built from, typed and in range; errors name the row."""
    def bad(problem: str) -> IngestError:
        return IngestError(f"{source}: row {n}: {problem}; fix or drop the row")

    if not isinstance(row, dict):
        raise bad(f"expected an object, got {type(row).__name__}")
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise bad(f"lacks {missing} (is this an InferenceX benchmarks export?)")
    for key in ("hardware", "framework", "model", "precision"):
        if not isinstance(row[key], str) or not row[key]:
            raise bad(f"'{key}' must be a non-empty string, got {row[key]!r}")
    if row["hardware"] not in known_chips():
        raise bad(f"unknown hardware {row['hardware']!r} (known: {', '.join(known_chips())})")
    for key in ("isl", "osl", "conc"):
        _positive_int(row, key, bad)
    for key in ("decode_tp", "decode_ep", "prefill_tp", "num_prefill_gpu", "num_decode_gpu"):
        if row.get(key) not in (None, 0):
            _positive_int(row, key, bad)
    m = row["metrics"]
    if not isinstance(m, dict) or "tput_per_gpu" not in m:
        raise bad("no metrics.tput_per_gpu")
    for key, v in m.items():
        if isinstance(v, int | float) and not isinstance(v, bool) and not math.isfinite(v):
            raise bad(f"metrics.{key} is {v}, not a finite number")
    url = row.get("run_url")
    if url not in (None, "") and web_link(url) is None:
        raise bad(f"run_url {str(url)[:200]!r} is not an http(s) URL (a dashboard links it)")
    tput = m["tput_per_gpu"]
    if isinstance(tput, bool) or not isinstance(tput, int | float) or tput < 0:
        raise bad(f"metrics.tput_per_gpu must be a number >= 0, got {tput!r}")


def to_point(row: dict[str, Any], n: int, source: str, run_id: str) -> dict[str, Any]:
    check_row(row, n, source)
    m = row["metrics"]
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
        "published": True,  # an InferenceX row: the dashboard marks it and links its source
        "status": "ok",
        "valid": True,
        "invalid_reasons": [],
        **chip_constants(row["hardware"]),
    }
    if point["gpus"] < 1:
        raise IngestError(f"{source}: row {n}: the row's topology gives {point['gpus']} GPUs; "
                          "fix decode_tp / num_*_gpu or drop the row")
    # metrics are numbers beside the identity, never part of it: a row's metrics cannot
    # rename the point, change its load level or GPU count, or mark it valid
    point.update({k: v for k, v in m.items() if k not in point
                  and isinstance(v, int | float) and not isinstance(v, bool)})
    return point


def read_rows(rows_file: Path) -> list[Any]:
    try:
        rows = json.loads(rows_file.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise IngestError(f"{rows_file}: cannot read JSON rows ({e}); give the UTF-8 JSON "
                          "of GET /api/v1/benchmarks") from None
    if isinstance(rows, dict):
        rows = rows.get("data") or rows.get("rows") or []
    if not isinstance(rows, list) or not rows:
        raise IngestError(f"{rows_file}: expected a JSON list of benchmark rows")
    return rows


def ingest(rows_file: Path, out: Path) -> list[dict[str, Any]]:
    rows = read_rows(rows_file)
    # every row checked before anything is written
    points = [to_point(r, i, str(rows_file), out.name) for i, r in enumerate(rows)]
    try:
        run = RunDir.open(out.parent, out.name)
        run.lock()
    except ValueError as e:
        raise IngestError(f"--out {out}: {e}; give a plain directory name") from None
    except (RunLocked, ResultsWriteError) as e:
        raise IngestError(f"--out {out}: {e}") from None
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
