"""InferenceX's multi-node keys as attach recipes (harness/catalog/multinode.py): pools, GPU
counts, draft lengths and deployments read from a master entry; the shipped recipes under
recipes/recipe/multinode/ compose and count their GPUs as prefill + decode pools."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.catalog.multinode import CatalogError, attach_recipe, deploy_name
from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.launches import launches
from harness.config.validate import gpus_of

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "recipes/recipe/multinode").glob("*.yaml"))

ENTRY = {  # the shape of configs/nvidia-master.yaml@843c6254's dynamo keys, values ours
    "image": "img:1", "model": "x", "model-prefix": "dsr1", "runner": "cluster:gb200-nv",
    "precision": "fp4", "framework": "dynamo-sglang", "multinode": True, "disagg": True,
    "scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": [
        {"spec-decoding": "mtp", "conc-list": [4, 8],
         "prefill": {"num-worker": 2, "tp": 4, "ep": 4, "dp-attn": True, "pcp-size": 2,
                     "additional-settings": ["CONFIG_FILE=recipes/a/ctx2_gen1_mtp2.yaml"]},
         "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": True}},
        {"spec-decoding": "none", "conc-list": [64],
         "prefill": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False,
                     "additional-settings": ["PREFILL_NODES=1"]},
         "decode": {"num-worker": 3, "tp": 8, "ep": 1, "dp-attn": False,
                    "additional-settings": ["DECODE_NODES=3", "DECODE_MTP_SIZE=0"]}},
    ]}]},
}


def test_attach_recipe_reads_pools_draft_length_and_deployment() -> None:
    r = attach_recipe(ENTRY, "k1", "abc", "configs/nvidia-master.yaml")
    assert {"override /engine": "endpoint"} in r["defaults"]
    assert {"override /chip": "gb200"} in r["defaults"]
    assert {"override /scenarios": "fixed-1k1k"} in r["defaults"]
    assert r["recipe_source"].startswith("SemiAnalysisAI/InferenceX@abc configs/nvidia-master")
    a, b = r["search_space"]
    assert a["prefill"] == {"workers": 2, "tp": 4, "ep": 4, "dp_attention": True, "pcp": 2}
    assert a["speculator_k"] == 2 and a["deploy_recipe"] == "recipes/a/ctx2_gen1_mtp2.yaml"
    assert b["spec_decoding"] is False and "speculator_k" not in b
    assert b["deploy_recipe"] == "PREFILL_NODES:1/DECODE_NODES:3/DECODE_MTP_SIZE:0"
    assert deploy_name(ENTRY["scenarios"]["fixed-seq-len"][0]["search-space"][0]).endswith(
        "mtp2.yaml")


def test_a_single_node_key_is_refused() -> None:
    with pytest.raises(CatalogError, match="not a multi-node key"):
        attach_recipe({**ENTRY, "multinode": False}, "k1", "abc", "m.yaml")


def _deployments(path: Path) -> dict[str, int]:
    """Each deployment of a shipped recipe and its GPUs, counted from the file's pools."""
    out: dict[str, int] = {}
    for row in yaml.safe_load(path.read_text())["search_space"]:
        gpus = sum(p["workers"] * p["tp"] * p.get("pp", 1) * p.get("pcp", 1)
                   for p in (row["prefill"], row["decode"]))
        out[row["deploy_recipe"]] = gpus
    return out


def _compose(key: str, deployment: str | None):
    model = yaml.safe_load((ROOT / f"recipes/recipe/multinode/{key}.yaml").read_text())
    name = model["defaults"][0]["override /model"]
    if not (ROOT / f"recipes/model/{name}.yaml").exists():
        pytest.skip(f"recipes/model/{name}.yaml not shipped yet (the models branch adds it)")
    ov = [f"recipe=multinode/{key}", "engine.url=http://127.0.0.1:9"]
    return compose_sweep(ov + ([f"engine.deployment={deployment}"] if deployment else []))


def test_a_shipped_key_measures_one_deployment_with_its_gpus() -> None:
    key = "dsr1-fp4-b200-dynamo-trt"
    dep = "recipes/trtllm/b200-fp4/8k1k/mtp/ctx1_gen3_tep8_batch16_eplb0_mtp3.yaml"
    [one] = launches(_compose(key, dep))
    assert gpus_of(one.sc) == 1 * 4 + 3 * 8 and one.sc.concurrency == [66]
    assert one.sc.topology.decode.workers == 3 and one.sc.speculator.k == 3
    with pytest.raises(ConfigError, match=r"deployments; engine\.url is one"):
        _compose(key, None)
    with pytest.raises(ConfigError, match="no row of this recipe is deployed by"):
        _compose(key, dep.replace("gen3", "gen9"))


def test_all_94_multinode_keys_are_shipped() -> None:
    assert len(SHIPPED) == 94


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_multinode_key_composes_and_counts_its_gpus(path: Path) -> None:
    deps = _deployments(path)
    dep = sorted(deps)[0]
    launched = launches(_compose(path.stem, dep))
    assert launched and all(gpus_of(one.sc) == deps[dep] for one in launched)
    assert all(one.sc.engine.kind == "endpoint" for one in launched)
