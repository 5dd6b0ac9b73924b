"""The engine and scenario kinds a config may name. Config validation sits below the engines and
workloads, so it reads the kinds from here; each registry (harness.engines.registry,
harness.workloads.registry) maps exactly these names and refuses to import otherwise."""

from __future__ import annotations

ENGINE_KINDS = ("llamacpp", "vllm", "sglang", "trtllm", "atom", "endpoint")
WORKLOAD_KINDS = ("fixed", "agentic", "timestamped")
# speculator.sample_method: how drafts are sampled and verified (harness/spec/acceptance.py keys
# curves on it): greedy (vLLM's default draft_sample_method; what SGLang, TensorRT-LLM and ATOM
# drafters run), probabilistic (vLLM draft_sample_method probabilistic), probabilistic-block
# (and rejection_sample_method block).
SAMPLE_METHODS = ("greedy", "probabilistic", "probabilistic-block")
# Engines whose server argv can ask for non-greedy drafts (vLLM's speculative-config).
SAMPLING_ENGINES = ("vllm", "endpoint")
