"""The engine and scenario kinds a config may name. Config validation sits below the engines and
workloads, so it reads the kinds from here; each registry (harness.engines.registry,
harness.workloads.registry) maps exactly these names and refuses to import otherwise."""

from __future__ import annotations

ENGINE_KINDS = ("llamacpp", "vllm", "sglang", "trtllm", "atom", "endpoint", "multinode")
WORKLOAD_KINDS = ("fixed", "agentic", "timestamped")
# speculator.sample_method: how drafts are sampled and verified (harness/speculation/acceptance.py keys
# curves on it): greedy (vLLM's default draft_sample_method; what SGLang, TensorRT-LLM and ATOM
# drafters run), probabilistic (vLLM draft_sample_method probabilistic), probabilistic-block
# (and rejection_sample_method block).
SAMPLE_METHODS = ("greedy", "probabilistic", "probabilistic-block")
# Engines whose server argv can ask for non-greedy drafts (vLLM's speculative-config).
SAMPLING_ENGINES = ("vllm", "endpoint")
# scenario.correlation_headers: the routing headers AIPerf can add to every agentic request,
# each carrying the request's X-Correlation-ID (its stream's session id), so a router in front
# of a DP engine keeps a session on one rank. Upstream switches them on with
# AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID and
# AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID (off by default; SemiAnalysisAI/
# agentx-harness:src/aiperf/common/environment.py@de0e17de8b88e6736446e5b03d4e2305271638ce
# `_HTTPSettings`, set in `build_headers` of src/aiperf/transports/base_transports.py
# @70af1f538695fb51f612710ce55a728f389a4ead). X-Dynamo-Session-ID is PyPI aiperf 0.13.0's
# AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID (off by default; aiperf/common/
# environment.py, aiperf/transports/base_transports.py `build_headers`): the request's
# X-Correlation-ID, and on a sub-agent's requests X-Dynamo-Parent-Session-ID, the id of the
# session that spawned it (DYNAMO_PARENT_HEADER; harness.workloads.replay_sessions).
CORRELATION_HEADERS = ("X-Session-ID", "X-SMG-Routing-Key", "X-Dynamo-Session-ID")
DYNAMO_SESSION_HEADER, DYNAMO_PARENT_HEADER = "X-Dynamo-Session-ID", "X-Dynamo-Parent-Session-ID"
