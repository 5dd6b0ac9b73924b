"""The correctness results as a point carries them: fields and validity rules.

An eval below its floor invalidates every point of the job (InferenceX validate_scores.py
fails the job the same way); a lossless check that finds the speculator changed the output
invalidates the speculative points it ran for: speed bought by changing the answer is not a
speedup. Pure: the sweep writes them (harness.sweep.correctness)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.evals.accuracy import EvalResult
from harness.evals.lossless import LosslessResult
from harness.record.validity import Rule


def eval_rule(r: EvalResult) -> Rule:
    worst = min(r.metrics.values()) if r.metrics else r.score
    bound = f">= {r.floor:g} ({r.floor_source})"
    if r.passed:
        return Rule(f"eval_{r.task}", True, r.score, bound,
                    f"{r.task} {r.score:.3f} over {r.n} questions")
    return Rule(f"eval_{r.task}", False, worst, bound,
                f"{r.task} scored {worst:.3f} < floor {r.floor:g} over {r.n} questions: "
                "this configuration answers wrongly",
                "check the engine build, kernels, quantisation and speculative settings "
                "against a known-good one (InferenceX caught a lossy speculative build so); "
                "a small eval.limit is noisy: rerun with the whole split")


def lossless_rule(r: LosslessResult) -> list[Rule]:
    if not r.ran:
        return []
    return [Rule("lossless", r.ok, r.ok, "token-identical at T=0; same distribution above",
                 r.verdict(),
                 "" if r.ok else "the speculator changes the output: check the engine's "
                 "verification (batched numerics, sampler settings) before trusting its speed; "
                 "correctness/<job>.json has each divergence")]


def eval_fields(results: Sequence[EvalResult]) -> dict[str, Any]:
    out: dict[str, Any] = {"eval_results": [r.to_json() for r in results]}
    for r in results:
        out.update({f"eval_{r.task}_score": r.score, f"eval_{r.task}_stderr": r.stderr,
                    f"eval_{r.task}_n": r.n, f"eval_{r.task}_floor": r.floor,
                    f"eval_{r.task}_passed": r.passed})
    return out


def lossless_fields(r: LosslessResult) -> dict[str, Any]:
    return {"lossless_verdict": r.verdict(), "lossless_ok": r.ok if r.ran else None,
            "lossless": r.to_json()}
