"""A key's precision as the model recipe spells it, picked by the checkpoint its launches load.

InferenceX calls several checkpoints of one model by one precision (`fp4` is NVIDIA's NVFP4,
AMD's MXFP4 and MXFP4-Preview, NVFP4-V2; configs/amd-master.yaml and nvidia-master.yaml
@843c6254). recipes/model/*.yaml keys each checkpoint by its own precision name, so a recipe
names the key whose checkpoint is the `model:` its captured jobs ran, never the master's
precision word (which would pick another checkpoint)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.catalog.multinode import CatalogError
from harness.config.locations import repo_root


def model_recipe(name: str) -> dict[str, Any]:
    return yaml.safe_load((repo_root() / "recipes" / "model" / f"{name}.yaml").read_text())


def captured_model(key: str, captures: list[Mapping[str, Any]], entry_model: str = "") -> str:
    """The checkpoint every launch's job names (before a runner's cluster copy replaced it in
    MODEL_PATH; the master entry's `model:` where a job does not say); one per key."""
    found = {str((c.get("job") or {}).get("model") or entry_model or "") for c in captures}
    found.discard("")
    if len(found) != 1:
        raise CatalogError(f"{key}: launches name {sorted(found) or 'no'} checkpoint(s); a "
                           "recipe loads one")
    return found.pop()


def precision_for(key: str, recipe_name: str, checkpoint: str, master_precision: str,
                  recipe: Mapping[str, Any] | None = None) -> str:
    """The precision key of `recipe_name` whose checkpoint is `checkpoint` (the master's word
    when several are, or when the checkpoint is the recipe's hf_id at that precision)."""
    r = recipe if recipe is not None else model_recipe(recipe_name)
    cks = dict(r.get("checkpoints") or {})
    hits = [p for p, v in cks.items() if v == checkpoint]
    if master_precision in hits or (not hits and checkpoint == r.get("hf_id")
                                    and master_precision not in cks):
        return master_precision
    if hits:
        return hits[0]
    where = Path("recipes") / "model" / f"{recipe_name}.yaml"
    raise CatalogError(f"{key}: its launches load {checkpoint}, which no precision of {where} "
                       f"names; add it under checkpoints (and precisions) there")
