"""engine.kv_offload rendered by each adapter's own command as upstream's agentic scripts spell
it (harness/engines/kv_offload.py), refused where an engine has no such backend, and left to an
upstream command that carries its own."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache

import pytest
import yaml

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.schema import KvOffloadConfig
from harness.config.validate_catalog import check_kv_offload
from harness.engines.registry import make_adapter
from harness.engines.template import flag_value


@cache
def _base():
    return compose_sweep(["engine=vllm", "engine.python=null", "model=deepseek-r1",
                          "chip=b200", "topology.tp=8"])


def _sc(kind: str, kv: KvOffloadConfig, **engine):
    sc = _base()
    return replace(sc, engine=replace(sc.engine, kind=kind, kv_offload=kv, speculators=[],
                                      **engine))


def test_vllm_simple_offload_spells_the_connector_and_bytes_per_rank() -> None:
    plan = make_adapter(_sc("vllm", KvOffloadConfig("vllm-simple", dram_gb_per_rank=200))
                        ).launch_plan(8888, 8)
    cfg = json.loads(flag_value(plan.argv, "--kv-transfer-config") or "{}")
    assert cfg["kv_connector"] == "SimpleCPUOffloadConnector"
    assert cfg["kv_connector_extra_config"]["cpu_bytes_to_use_per_rank"] == 200_000_000_000
    assert plan.env["PYTHONHASHSEED"] == "42"


def test_sglang_hicache_and_trtllm_host_cache() -> None:
    plan = make_adapter(_sc("sglang", KvOffloadConfig("hicache", dram_gb_per_rank=100,
                                                      config={"ratio": 4}))
                        ).launch_plan(8888, 8)
    assert "--enable-hierarchical-cache" in plan.argv
    assert flag_value(plan.argv, "--hicache-ratio") == "4"
    assert flag_value(plan.argv, "--hicache-write-policy") == "write_through"
    plan = make_adapter(_sc("trtllm", KvOffloadConfig("native", dram_gb_per_rank=50))
                        ).launch_plan(8888, 8)
    opts = yaml.safe_load(next(iter(plan.files.values())))
    assert opts["kv_cache_config"]["host_cache_size"] == 50_000_000_000
    assert opts["kv_cache_config"]["enable_block_reuse"] is False  # the adapter's own kept


def test_an_upstream_command_keeps_its_own_flags() -> None:
    tpl = ["vllm", "serve", "{model}", "--port", "{port}"]
    plan = make_adapter(_sc("vllm", KvOffloadConfig("vllm-simple", dram_gb_per_rank=1),
                            argv_template=tpl)).launch_plan(8888, 8)
    assert "--kv-transfer-config" not in plan.argv


def test_a_backend_the_engine_lacks_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot offload KV to 'vllm-simple'"):
        check_kv_offload(_sc("sglang", KvOffloadConfig("vllm-simple", dram_gb_per_rank=1)),
                         lambda k: "recipes/recipe/x.yaml")
    with pytest.raises(ConfigError, match="DRAM budget"):
        check_kv_offload(_sc("vllm", KvOffloadConfig("vllm-simple")),
                         lambda k: "recipes/recipe/x.yaml")
