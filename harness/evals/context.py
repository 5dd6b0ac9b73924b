"""What the correctness stages need from the engine they run on: every slot sized for the
eval's context (InferenceX's compute_eval_context_length: the benchmark's context, capped at
the model's native maximum; benchmarks/benchmark_lib.sh @843c6254)."""

from __future__ import annotations

from dataclasses import replace

from harness.config.schema import SweepConfig
from harness.engines.hints import EngineHints


def eval_context(sc: SweepConfig) -> int:
    """Tokens one eval request may need: eval.max_length capped at the model's context."""
    return min(sc.eval.max_length, sc.model.context_length) if sc.eval.tasks else 0


def with_eval_context(hints: EngineHints, sc: SweepConfig) -> EngineHints:
    """The workload's hints, every slot long enough for the eval's requests too (the
    lossless check's prompts are far shorter than either)."""
    need = eval_context(sc)
    if need <= hints.longest_request_tokens:
        return hints
    return replace(hints, longest_request_tokens=need)
