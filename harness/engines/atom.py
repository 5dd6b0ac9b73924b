"""ATOM (AMD, ROCm): `python -m atom.entrypoints.openai_server`, vLLM-like flags. Injected
acceptance: `--spec-decode-acceptance-length AL` (docs/methodology.md §5)."""

from __future__ import annotations

from harness.engines.base import EngineAdapter, LaunchPlan


class AtomAdapter(EngineAdapter):
    kind = "atom"

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        t, spec = self.sc.topology, self.sc.speculator
        argv = [self.python(), "-m", "atom.entrypoints.openai_server", "--model", self.checkpoint,
                "--host", "127.0.0.1", "--port", str(port),
                "--tensor-parallel-size", str(t.tp)]
        if t.dp_attention:
            argv += ["--enable-dp-attention"]
        if t.ep > 1 or t.dp_attention:
            argv += ["--enable-expert-parallel"]
        if spec.method != "none":
            argv += ["--method", spec.method, "--num-speculative-tokens", str(spec.k)]
        if self.acceptance.mode == "injected":
            argv += ["--spec-decode-acceptance-length", f"{self.acceptance.length:g}"]
        argv += ["--max-model-len", str(self.context_per_request())]
        argv += list(self.sc.engine.extra_args)
        return self.containerize(LaunchPlan(argv=argv, env=dict(self.sc.engine.env), port=port))
