"""KV offloading (engine.kv_offload) as each engine's own flags, spelled as InferenceX's agentic
scripts spell them (benchmarks/single_node/agentic/*.sh@843c6254):

- vLLM `vllm-simple`: `--kv-transfer-config` SimpleCPUOffloadConnector with
  cpu_bytes_to_use_per_rank, PYTHONHASHSEED=42 (dsv4_fp4_b200_vllm_mtp.sh);
- vLLM `mooncake`: MooncakeStoreConnector, load_async; its store config and `mooncake_master`
  are a file and a helper of the recipe (same script);
- vLLM `lmcache`: LMCacheMPConnector to the LMCache MP server on 127.0.0.1:5555, a daemon
  helper (dsv4_fp4_mi355x_vllm_mtp.sh);
- SGLang `hicache`: `--enable-hierarchical-cache` with ratio 8, write_through, direct,
  page_first_direct (dsv4_fp4_b200_sglang_mtp.sh);
- TensorRT-LLM `native`: kv_cache_config.host_cache_size in bytes (minimaxm3_fp4_b200_trt_mtp.sh).

An upstream command (engine.argv_template) is used as it is: it carries its own offload flags
(or, where upstream's script does not render the master's offload for a row, none; the
recipe's kv_offload then only records the master's). The renderers serve the adapters' own
commands, and add nothing a command already has. `config` merges over the backend's
defaults."""

from __future__ import annotations

import json
from typing import Any

from harness.config.schema import KvOffloadConfig
from harness.engines.template import has_flag

GB = 1000 * 1000 * 1000  # upstream: TOTAL_CPU_DRAM_GB * 1000^3 / GPU_COUNT


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def vllm_offload(kv: KvOffloadConfig) -> tuple[list[str], dict[str, str]]:
    if kv.backend == "none":
        return [], {}
    if kv.backend == "vllm-simple":
        extra = {"cpu_bytes_to_use_per_rank": int(kv.dram_gb_per_rank * GB),
                 "enable_cross_layers_blocks": "true", "lazy_offload": False, **kv.config}
        cfg = {"kv_connector": "SimpleCPUOffloadConnector", "kv_role": "kv_both",
               "kv_connector_extra_config": extra}
        return ["--kv-transfer-config", _compact(cfg)], {"PYTHONHASHSEED": "42"}
    if kv.backend == "mooncake":
        cfg = {"kv_connector": "MooncakeStoreConnector", "kv_role": "kv_both",
               "kv_connector_extra_config": {"load_async": True, **kv.config}}
        return ["--kv-transfer-config", _compact(cfg)], {"PYTHONHASHSEED": "0"}
    if kv.backend == "lmcache":  # the LMCache MP server is a daemon helper of the recipe
        extra = {"lmcache.mp.host": "tcp://127.0.0.1", "lmcache.mp.port": 5555,
                 "lmcache.mp.mq_timeout": 6000.0, **kv.config}
        cfg = {"kv_connector": "LMCacheMPConnector",
               "kv_connector_module_path": "lmcache.integration.vllm.lmcache_mp_connector",
               "kv_role": "kv_both", "kv_connector_extra_config": extra}
        return ["--kv-transfer-config", _compact(cfg)], {"PYTHONHASHSEED": "0",
                                                          "LMCACHE_BLOCKING_TIMEOUT_SECS": "1200"}
    raise ValueError(f"vLLM has no KV offload backend {kv.backend!r}")


def sglang_offload(kv: KvOffloadConfig) -> tuple[list[str], dict[str, str]]:
    if kv.backend == "none":
        return [], {}
    if kv.backend == "hicache":
        c = {"ratio": 8, "write_policy": "write_through", "io_backend": "direct",
             "mem_layout": "page_first_direct", **kv.config}
        return ["--enable-hierarchical-cache", "--hicache-ratio", str(c["ratio"]),
                "--hicache-write-policy", str(c["write_policy"]),
                "--hicache-io-backend", str(c["io_backend"]),
                "--hicache-mem-layout", str(c["mem_layout"])], {}
    raise ValueError(f"SGLang has no KV offload backend {kv.backend!r}")


def trtllm_offload(kv: KvOffloadConfig) -> dict[str, Any]:
    """The extra-options YAML keys (merged under kv_cache_config)."""
    if kv.backend == "none":
        return {}
    if kv.backend == "native":
        return {"kv_cache_config": {"host_cache_size": int(kv.dram_gb_per_rank * GB),
                                    **kv.config}}
    raise ValueError(f"TensorRT-LLM has no KV offload backend {kv.backend!r}")


OWN_FLAG = {"vllm": "--kv-transfer-config", "sglang": "--enable-hierarchical-cache"}


def add_offload(kind: str, kv: KvOffloadConfig, argv: list[str], env: dict[str, str]
                ) -> tuple[list[str], dict[str, str]]:
    """argv and env with the backend's flags, unless the command already has them."""
    render = {"vllm": vllm_offload, "sglang": sglang_offload}.get(kind)
    if render is None or kv.backend == "none" or has_flag(argv, OWN_FLAG[kind]):
        return argv, env
    flags, more = render(kv)
    return [*argv, *flags], {**more, **env}

