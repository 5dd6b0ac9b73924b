"""SGLang: `python -m sglang.launch_server`. Injected acceptance through its own environment
knobs: SGLANG_SIMULATE_ACC_LEN with the `match-expected` method (exact mean) and
`real-draft-token` mode (streaming stays intact), docs/methodology.md §5."""

from __future__ import annotations

from harness.engines.base import EngineAdapter, LaunchPlan
from harness.engines.kv_offload import add_offload
from harness.engines.template import has_flag

SGLANG_ALGORITHMS = {"mtp": "EAGLE", "eagle": "EAGLE", "eagle3": "EAGLE3", "ngram": "NGRAM",
                     "draft_model": "STANDALONE"}


class SglangAdapter(EngineAdapter):
    kind = "sglang"

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        argv = self.templated_argv(port, max_concurrency)
        if argv is None:
            argv = self.own_argv(port, max_concurrency)
        elif not has_flag(argv, "--enable-metrics"):
            argv.append("--enable-metrics")  # what verifies a point's acceptance
        env = dict(self.sc.engine.env)
        if not self.sc.engine.argv_template:  # an upstream command carries its own
            argv, env = add_offload(self.kind, self.sc.engine.kv_offload, argv, env)
        if self.acceptance.mode == "injected":
            env.update({
                "SGLANG_SIMULATE_ACC_LEN": f"{self.acceptance.length:g}",
                "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
            })
        return self.containerize(LaunchPlan(argv=argv, env=env, port=port))

    def own_argv(self, port: int, max_concurrency: int) -> list[str]:
        t, spec = self.sc.topology, self.sc.speculator
        argv = [self.python(), "-m", "sglang.launch_server",
                "--model-path", self.checkpoint, "--served-model-name", self.served_model_name,
                "--host", self.sc.engine.host, "--port", str(port), "--tp", str(t.tp),
                # off by default; its counters and accept-length gauge are how a point's
                # realised acceptance is verified (docs/engine-metrics.md)
                "--enable-metrics"]
        if t.ep > 1:
            argv += ["--ep", str(t.ep)]
        if t.dp_attention:
            argv += ["--enable-dp-attention", "--dp", str(t.tp)]
        if t.pp > 1:
            argv += ["--pp-size", str(t.pp)]
        if spec.method != "none":
            argv += ["--speculative-algorithm", SGLANG_ALGORITHMS.get(spec.method, spec.method),
                     "--speculative-num-steps", str(spec.k),
                     "--speculative-eagle-topk", "1",
                     "--speculative-num-draft-tokens", str(spec.k + 1)]
            if spec.draft_model:
                argv += ["--speculative-draft-model-path", spec.draft_model]
        if not self.prefix_caching:
            argv += ["--disable-radix-cache"]
        argv += ["--context-length", str(self.context_per_request()),
                 "--max-running-requests", str(self.max_running(max_concurrency))]
        return argv + list(self.sc.engine.extra_args)
