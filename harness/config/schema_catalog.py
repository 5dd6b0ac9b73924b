"""Schemas of what InferenceX's catalog launches beside the server command (issue 21): KV
offload, helper processes, setup steps run in the image, disaggregated pools. Re-exported by
harness.config.schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING


@dataclass
class KvOffloadConfig:
    """KV cache offloaded past GPU memory (InferenceX `kv-offloading` / `kv-offload-backend`
    / `dram-utilization`, configs/*-master.yaml@843c6254). The adapter renders the backend's
    flags as upstream's agentic scripts spell them (harness/engines/kv_offload.py)."""

    # none | vllm-simple | lmcache | mooncake | hicache | native (TensorRT-LLM host cache)
    backend: str = "none"
    version: str | None = None  # the backend's package version upstream pins, if any
    dram_gb_per_rank: float = 0.0  # host DRAM each GPU rank may fill (upstream: total / GPUs)
    config: dict[str, Any] = field(default_factory=dict)  # merged over the backend's config


@dataclass
class HelperProcess:
    """A process started with the engine (a router in front of it, a KV store daemon), from
    an argv list: placeholders {port} (the job's port), {port+N}, {host}, {tp}, {dp},
    {launch_dir}. Started after the engine is ready (a router) or before it (a daemon)."""

    name: str = MISSING  # e.g. vllm-router, sglang-router, mooncake_master
    role: str = "router"  # router (after the engine, in front of it) | daemon (before it)
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    port_offset: int = 0  # it listens on the job's port + this (a router in front: 0)
    health_path: str | None = None  # GET answered 200 when ready; None: the port accepting
    fronts: bool = False  # the client's traffic goes through it (the engine then sits behind)


@dataclass
class SetupStep:
    """A job-time step run inside the image before the server (InferenceX scripts' `pip
    install`, `sed -i` patches, patch scripts), as an argv list, never a shell string."""

    kind: str = "command"  # install | patch | command (what it is for; all run the same way)
    argv: list[str] = field(default_factory=list)
    description: str = ""


@dataclass
class PoolConfig:
    """One disaggregated pool of a multi-node key (InferenceX `prefill:` / `decode:`)."""

    workers: int = 1
    tp: int = 1
    ep: int = 1
    dp_attention: bool = False
    pp: int = 1
    dcp: int = 1
    pcp: int = 1

    def gpus(self) -> int:
        return self.workers * self.tp * self.pp * self.pcp
