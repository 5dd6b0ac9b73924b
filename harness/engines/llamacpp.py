"""The embedded engine: llama.cpp's server (PyPI `xllamacpp`) on the CPU."""

from __future__ import annotations

import json
from typing import Any

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.config.validate import gpus_of
from harness.engines.base import CHECKS_ONLY, EngineAdapter, LaunchPlan, Locate
from harness.engines.counter_types import (
    EngineCounters,
    PrefixCacheCounters,
    ServerCacheCounters,
    SpecCounters,
    TokenCounters,
    series,
)
from harness.engines.cpu_split import engine_cores
from harness.engines.weights import gguf_path

# llama-server flags engine.extra_args may carry, each onto the xllamacpp parameter it sets
# (llama.cpp common/arg.cpp spells the flags; xllamacpp.CommonParams holds the fields). The
# embedded server has no command line, so any other flag is refused rather than dropped.
# Flags for what the harness sizes itself (context, slots, port, model, speculation) are not
# here: the recipe's own settings carry those.
LLAMA_FLAGS: dict[str, tuple[str, type]] = {
    "--batch-size": ("n_batch", int), "-b": ("n_batch", int),
    "--ubatch-size": ("n_ubatch", int), "-ub": ("n_ubatch", int),
    "--threads-batch": ("cpuparams_batch.n_threads", int),
    "-tb": ("cpuparams_batch.n_threads", int),
    "--threads-http": ("n_threads_http", int),
    "--cache-reuse": ("n_cache_reuse", int),
    "--keep": ("n_keep", int), "-n": ("n_predict", int), "--n-predict": ("n_predict", int),
    "--no-warmup": ("warmup", bool), "--no-context-shift": ("ctx_shift", bool),
    "--no-kv-offload": ("no_kv_offload", bool), "-nkvo": ("no_kv_offload", bool),
    "--no-perf": ("no_perf", bool),
    # llama.cpp's own thread pool's polling level (0-100) while it waits for work; a build with
    # OpenMP (the xllamacpp wheel's) waits in libgomp instead: engine.env OMP_WAIT_POLICY.
    "--poll": ("cpuparams.poll", int), "--poll-batch": ("cpuparams_batch.poll", int),
}
_NEGATED = {"--no-warmup", "--no-context-shift", "--no-perf"}  # these set their field False


def llama_params(args: list[str], where: str = "the engine recipe") -> dict[str, object]:
    """engine.extra_args as {xllamacpp parameter path: value}, or a ConfigError naming the flag
    that the embedded server cannot take."""
    out: dict[str, object] = {}
    key = "engine.extra_args"
    i = 0
    while i < len(args):
        flag, _, inline = args[i].partition("=")
        if flag not in LLAMA_FLAGS:
            raise ConfigError(where, key,
                              f"the embedded llama.cpp cannot apply {args[i]!r} (it has no "
                              "command line; its parameters are set one by one)",
                              f"use only {', '.join(sorted(LLAMA_FLAGS))}, or remove it")
        field, kind = LLAMA_FLAGS[flag]
        if kind is bool:
            if inline:
                raise ConfigError(where, key, f"{flag} takes no value, got {args[i]!r}",
                                  f"write {flag} alone")
            out[field] = flag not in _NEGATED
            i += 1
            continue
        value = inline or (args[i + 1] if i + 1 < len(args) else "")
        try:
            out[field] = int(value)
        except ValueError:
            raise ConfigError(where, key, f"{flag} needs an integer, got {value!r}",
                              f"write {flag} N") from None
        i += 1 if inline else 2
    return out


class LlamaCppAdapter(EngineAdapter):
    kind = "llamacpp"
    # What its /metrics exposes, read from its source (docs/engine-metrics.md)
    metrics = EngineCounters(
        kind="llamacpp",
        source="ggml-org/llama.cpp:tools/server/server-task.cpp@17f5f8a8 (to_metrics)",
        tokens=TokenCounters(series("llamacpp:prompt_tokens_total"),
                             series("llamacpp:tokens_predicted_total"),
                             series("llamacpp:prompt_tokens_cached_total"),
                             prompt_excludes_cached=True),
        prefix_cache=PrefixCacheCounters(series("llamacpp:prompt_tokens_cached_total"),
                                         series("llamacpp:prompt_tokens_total"),
                                         queries_exclude_hits=True),
        spec=SpecCounters(drafts=series("llamacpp:spec_decode_num_drafts_total"),
                          accepted=series("llamacpp:spec_decode_num_accepted_tokens_total"),
                          draft_tokens=series("llamacpp:spec_decode_num_draft_tokens_total")),
        # Older builds only (current ones removed the KV gauges): device hits are the cached
        # counter, read through prefix_cache.
        cache=ServerCacheCounters(kv_usage=(series("llamacpp:kv_cache_usage_ratio"),)),
        launch_requirements=("endpoint_metrics=True (--metrics)",),
    )
    keep_alive = False  # its HTTP server closes the connection after every streamed reply
    applies = frozenset({*CHECKS_ONLY, "extra_args", "env", "threads", "cpu_affinity", "nice",
                         "python", "host"})

    @classmethod
    def check_topology(cls, sc: SweepConfig, where: Locate) -> None:
        if gpus_of(sc) > 1 or sc.topology.ep > 1:
            raise ConfigError.at(where, "topology.tp",
                                 "the embedded llama.cpp engine serves on one device",
                                 "set topology.tp=1 topology.pp=1 topology.ep=1")

    @classmethod
    def validate(cls, sc: SweepConfig, where: Locate) -> None:
        llama_params(list(sc.engine.extra_args), where("engine.extra_args"))
        spec = sc.speculator
        if spec.method == "draft_model" and not spec.draft_model:
            raise ConfigError.at(where, "speculator.draft_model",
                "speculator=draft_model on llama.cpp needs the drafter's weights",
                "set speculator.draft_model to a GGUF path, or 'self' for the model drafting "
                "for itself")
        gguf_path(sc.model)  # fails early with an install hint if the weights are missing

    @property
    def stream_interval(self) -> int:
        """llama.cpp's server sends one chunk per token (it has no stream-interval setting)."""
        return 1

    def _draft_path(self) -> str | None:
        d = self.sc.speculator.draft_model
        return str(gguf_path(self.sc.model)) if d == "self" else d

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        spec = self.sc.speculator
        per_slot = self.context_per_request()
        cfg: dict[str, Any] = {
            "model_path": str(gguf_path(self.sc.model)),
            "alias": self.served_model_name,
            "port": port,
            "n_parallel": self.max_running(max_concurrency),
            # n_ctx is shared by all slots: size every slot for the scenario's longest request.
            "n_ctx": per_slot * self.max_running(max_concurrency),
            "host": self.sc.engine.host,
            "params": llama_params(list(self.sc.engine.extra_args)),
        }
        cores = engine_cores(self.sc.engine.threads)
        if cores is not None:  # threads null: llama.cpp's own default (every core), unpinned
            cfg["threads"] = len(cores)
        if spec.method != "none":
            cfg["speculative"] = {
                "method": spec.method,
                "k": spec.k,
                "ngram_min": spec.ngram_min,
                "draft_path": self._draft_path(),
                # Injected acceptance: llama.cpp's synthetic acceptance takes the same
                # per-position unconditional rates as vLLM's synthetic rejection sampler.
                "synthetic_rates": self.synthetic_rates(),
            }
        argv = [self.python(), "-m", "harness.engines.llamacpp_server", json.dumps(cfg)]
        return LaunchPlan(argv=argv, env=dict(self.sc.engine.env), port=port,
                          ready_paths=("/health", "/v1/models"),
                          cpus=tuple(cores) if cores and self.sc.engine.cpu_affinity else None,
                          nice=self.sc.engine.nice)

    def request_extras(self) -> dict[str, Any]:
        # Random prompts (fixed sequence): no prefix reuse, as InferenceX runs them.
        return {} if self.prefix_caching else {"cache_prompt": False}

    def version(self, server_info: dict[str, Any]) -> str:
        import xllamacpp

        build = server_info.get("build_info") or xllamacpp.BUILD_INFO.get("commit", "")
        return f"xllamacpp {xllamacpp.__version__} (llama.cpp {build})"

