"""A speculator's own name on every point: `self_draft`, not the method it runs (`draft_model`).

A point's identity records the speculator's method and k (harness/record/point_record.py), which
is what the engine is told; two shipped speculators share a method (recipes/speculator/
draft_model.yaml and self_draft.yaml: the model drafting for itself is `draft_model: self`), so
tables, labels, file names and gate lines that show the method alone call `speculator=self_draft`
"draft_model". `spec_name` is the name a user chose. A point written with it keeps it; for one
written before, it is worked out on read from the job's resolved config (configs/<job>.yaml),
else it is the method.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.record.file_names import safe_name

SELF = "self"  # speculator.draft_model for a model drafting for itself


def speculator_name(method: str | None, draft_model: str | None) -> str:
    """The speculator's name from what its config holds."""
    method = method or "none"
    if method == "draft_model" and draft_model == SELF:
        return "self_draft"
    return method


def spec_name(p: Mapping[str, Any]) -> str:
    """The name to show for a flat point (or a PointRecord: `.get` reads its extras)."""
    return str(p.get("spec_name") or speculator_name(p.get("spec_method"),
                                                     p.get("spec_draft_model")))


def spec_label(p: Mapping[str, Any], with_al: bool = True) -> str:
    """`self_draft k=2 · AL 1.8 injected`; "plain" without a speculator."""
    name = spec_name(p)
    if name == "none":
        return "plain"
    label = f"{name} k={p.get('spec_k')}"
    al = p.get("spec_acceptance_length")
    if with_al and p.get("spec_acceptance_mode") == "injected" and al is not None:
        label += f" · AL {al:g} injected"
    return label


def _job_speculator(run_dir: Path, job: str, cache: dict[str, dict[str, Any]]
                    ) -> dict[str, Any]:
    if job not in cache:
        path = run_dir / "configs" / f"{safe_name(job)}.yaml"
        try:
            cfg = yaml.safe_load(path.read_text()) if path.is_file() else None
        except (OSError, yaml.YAMLError):
            cfg = None
        spec = cfg.get("speculator") if isinstance(cfg, dict) else None
        cache[job] = spec if isinstance(spec, dict) else {}
    return cache[job]


def name_speculators(points: Iterable[dict[str, Any]], run_dir: Path) -> None:
    """Give each speculative point without `spec_name` the one its job's config implies
    (in place); points whose job config is gone keep their method as name (`spec_name`)."""
    cache: dict[str, dict[str, Any]] = {}
    for p in points:
        if p.get("spec_name") or (p.get("spec_method") or "none") == "none":
            continue
        job = p.get("job")
        spec = _job_speculator(Path(run_dir), job, cache) if isinstance(job, str) else {}
        draft = spec.get("draft_model")
        if spec.get("method") == p.get("spec_method") and isinstance(draft, str):
            p.setdefault("spec_draft_model", draft)
            p["spec_name"] = speculator_name(p.get("spec_method"), draft)
