"""Model recipes cover every model InferenceX's masters run: each master `model:` value is the
hf_id or a checkpoint of exactly one recipe (the catalog importer picks a key's model recipe by
that match, and the key's precision by the checkpoint's key)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from harness.config.compose import compose_sweep
from harness.config.validate import check_combinations

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "inferencex_master_models.json"
MIRROR = Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo")
COMMIT = "843c6254ff69b567f772f6a5fd97675af3d04431"
MASTER_MODELS = ("deepseek-r1", "deepseek-v4-pro", "qwen3.5-397b-a17b", "glm-5.2", "glm-5.1",
                 "kimi-k3", "kimi-k2.6", "minimax-m3")


def recipes() -> dict[str, dict]:
    return {p.stem: yaml.safe_load(p.read_text())
            for p in sorted((ROOT / "recipes" / "model").glob("*.yaml"))}


def owners(value: str) -> list[tuple[str, str]]:
    """(recipe, precision key) for every recipe naming `value` (hf_id: key "")."""
    out = []
    for name, r in recipes().items():
        keys = [k for k, v in (r.get("checkpoints") or {}).items() if v == value]
        if keys or r["hf_id"] == value:
            out.append((name, keys[0] if keys else ""))
    return out


def test_every_master_model_value_belongs_to_exactly_one_recipe() -> None:
    models = json.loads(FIXTURE.read_text())["models"]
    assert sum(len(keys) for keys in models.values()) == 208
    for value, keys in models.items():
        found = owners(value)
        assert len(found) == 1, f"{value} ({keys[0]} ...) is in recipes {found}"
        assert found[0][0] in MASTER_MODELS
    assert {owners(v)[0][0] for v in models} == set(MASTER_MODELS)
    assert owners("amd/MiniMax-M3-MXFP4") == [("minimax-m3", "fp4-amd")]
    assert owners("deepseek-r1-fp4") == [("deepseek-r1", "fp4-srt-slurm")]


@pytest.mark.skipif(not (MIRROR / "HEAD").exists(), reason="no InferenceX clone here")
def test_the_fixture_is_what_the_masters_say() -> None:
    seen: dict[str, list[str]] = {}
    for vendor in ("nvidia", "amd"):
        text = subprocess.run(["git", "-C", str(MIRROR), "show",
                               f"{COMMIT}:configs/{vendor}-master.yaml"],
                              capture_output=True, text=True, check=True).stdout
        for key, entry in yaml.safe_load(text).items():
            seen.setdefault(entry["model"], []).append(f"{vendor}:{key}")
    assert seen == json.loads(FIXTURE.read_text())["models"]


@pytest.mark.parametrize("model", MASTER_MODELS)
def test_each_master_model_recipe_composes_at_every_precision(model) -> None:
    r = recipes()[model]
    assert set(r["checkpoints"]) == set(r["precisions"]) and r["default_precision"] in r[
        "precisions"]
    assert r["chat_encoder"] in ("template", "dsv4") and isinstance(r["thinking"], bool)
    sc = compose_sweep([f"model={model}", "engine=vllm", "scenarios=agentic-weka"])
    for precision in r["precisions"]:
        check_combinations(replace(sc, precision=precision),
                           lambda key: f"recipes/model/{model}.yaml")
    assert sc.model.checkpoints == r["checkpoints"] and sc.model.context_length > 0
