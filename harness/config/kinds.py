"""The engine and scenario kinds a config may name. Config validation sits below the engines and
workloads, so it reads the kinds from here; each registry (harness.engines.registry,
harness.workloads.registry) maps exactly these names and refuses to import otherwise."""

from __future__ import annotations

ENGINE_KINDS = ("llamacpp", "vllm", "sglang", "trtllm", "atom", "endpoint")
WORKLOAD_KINDS = ("fixed", "agentic", "timestamped")
