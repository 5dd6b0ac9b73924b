"""The embedded engine: llama.cpp's server (PyPI `xllamacpp`) on the CPU."""

from __future__ import annotations

import json
import sys
from typing import Any

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.engines.base import EngineAdapter, LaunchPlan, Locate
from harness.engines.cpu_split import engine_cores
from harness.engines.weights import gguf_path


class LlamaCppAdapter(EngineAdapter):
    kind = "llamacpp"
    keep_alive = False  # its HTTP server closes the connection after every streamed reply

    @classmethod
    def validate(cls, sc: SweepConfig, where: Locate) -> None:
        spec = sc.speculator
        if spec.method == "draft_model" and not spec.draft_model:
            raise ConfigError(
                where("speculator.draft_model"), "speculator.draft_model",
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
        argv = [sys.executable, "-m", "harness.engines.llamacpp_server", json.dumps(cfg)]
        return LaunchPlan(argv=argv, env=dict(self.sc.engine.env), port=port,
                          ready_paths=("/health", "/v1/models"),
                          cpus=tuple(cores) if cores and self.sc.engine.cpu_affinity else None)

    def request_extras(self) -> dict[str, Any]:
        # Random prompts (fixed sequence): no prefix reuse, as InferenceX runs them.
        return {} if self.prefix_caching else {"cache_prompt": False}

    def version(self, server_info: dict[str, Any]) -> str:
        import xllamacpp

        build = server_info.get("build_info") or xllamacpp.BUILD_INFO.get("commit", "")
        return f"xllamacpp {xllamacpp.__version__} (llama.cpp {build})"
