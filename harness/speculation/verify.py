"""Statistical verification of an injected acceptance length.

An injected point forces each draft's accepted count to a known distribution: the per-position
unconditional rates p_i of `harness.speculation.acceptance.synthetic_rates(al, k)`, with
P(count >= i) = p_i. The realised AL over n drafts is then a mean of n such counts (plus the
bonus token), so whether the engine applied the injection is a question of its standard
error, not of a fixed percentage: a fixed 2% fails short points at random and passes long
ones that are plainly off.

    mean(count)   = sum_i p_i                       = AL - 1
    E[count^2]    = sum_i (2i - 1) P(count >= i)    = sum_i (2i - 1) p_i
    var(count)    = E[count^2] - mean^2             (rates [1, f, 0]: f (1 - f))
    SE(mean AL)   = sqrt(var / n)

Every engine's injection knob realises this same per-draft distribution (floor(AL-1) plus a
Bernoulli of the fraction): vLLM's synthetic rejection sampling (position i accepted iff
uniform < conditional rate, see harness/engines/vllm_plugin.py), TensorRT-LLM's
TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS (NVIDIA/TensorRT-LLM:tensorrt_llm/_torch/
speculative/interface.py, `_apply_force_accepted_tokens`: integer part always, fraction as a
per-request probability), ATOM's --spec-decode-acceptance-length and SGLang's match-expected
(sgl-project/sglang:python/sglang/srt/speculative/spec_utils.py@00731f0b, SIMULATE_ACC_*).

What n is depends on the engine and is the caller's to give. SGLang's match-expected draws
ONE length per verify call (`torch.multinomial(..., num_samples=1)`) and applies it to every
request of the batch, so its independent draws are batch steps (per dp rank), not
requests x steps: pass the number of verify steps (e.g. `RealisedAcceptance.drafts` from the
sampled gauge, which counts intervals x decode_log_interval), or drafts / mean batch size when
only the request-level counter is known. The other engines draw per request and step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import NormalDist

from harness.speculation.acceptance import synthetic_rates

DEFAULT_CONFIDENCE = 0.999  # two-sided: z ~ 3.29; one false alarm per ~1000 honest points
DEFAULT_MIN_DRAFTS = 200
# Counters are integers, but gauges are printed floats and request ends drop a few accepted
# tokens (SGLang counts after truncation): a small absolute slack keeps exact ALs (variance 0)
# from failing on that alone.
DEFAULT_FLOOR = 0.005


def count_moments(rates: Sequence[float]) -> tuple[float, float]:
    """(mean, variance) of the per-draft accepted count, from unconditional rates p_i =
    P(count >= i), i = 1..k (non-increasing)."""
    ps = [float(p) for p in rates]
    increasing = any(b > a + 1e-12 for a, b in pairwise(ps))
    if increasing or any(not 0.0 <= p <= 1.0 for p in ps):
        raise ValueError(f"rates must be non-increasing probabilities, got {ps}")
    mean = sum(ps)
    second = sum((2 * i - 1) * p for i, p in enumerate(ps, start=1))
    return mean, max(0.0, second - mean * mean)


def z_for(confidence: float) -> float:
    """Two-sided normal quantile: 0.999 -> 3.2905."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str  # empty when ok
    requested: float
    realised: float | None
    n: float  # independent draws the realised AL averages
    z: float
    se: float  # standard error of the realised AL under the injected distribution
    sd_per_draft: float
    interval: tuple[float, float]  # realised ALs accepted as the requested one
    # What the engine's metric should read under the injection: the requested AL, or less
    # where the metric cuts each request's last step (harness.speculation.truncation).
    expected: float | None = None

    @property
    def error(self) -> float | None:
        """Relative error of the realised AL against what it should read (the old
        fixed-tolerance figure)."""
        centre = self.requested if self.expected is None else self.expected
        return None if self.realised is None else self.realised / centre - 1.0


def verify(requested: float, realised: float | None, n: float | None, *,
           k: int | None = None, rates: Sequence[float] | None = None,
           confidence: float = DEFAULT_CONFIDENCE, min_drafts: float = DEFAULT_MIN_DRAFTS,
           floor: float = DEFAULT_FLOOR, expected: float | None = None) -> Verdict:
    """Pass when |realised - expected| <= z * SE + floor and n >= min_drafts.

    `rates` are the forced per-position rates (default: synthetic_rates(requested, k));
    `n` the independent draws (see the module docstring for batch-drawing engines);
    `expected` what the engine's metric reads when it applies the injection (default: the
    requested AL; less for a metric that cuts each request's last step, as SGLang's does:
    harness.speculation.truncation.truncated_al over the window's output lengths)."""
    if rates is None:
        if k is None:
            raise ValueError("verify needs the draft length k or the forced rates")
        rates = synthetic_rates(requested, k)
    mean, var = count_moments(rates)
    if abs(mean + 1.0 - requested) > 1e-6:
        raise ValueError(f"rates {list(rates)} give AL {mean + 1:.4f}, not {requested}")
    sd, z = math.sqrt(var), z_for(confidence)
    draws = float(n or 0.0)
    se = sd / math.sqrt(draws) if draws > 0 else math.inf
    half = z * se + floor
    centre = requested if expected is None else expected
    interval = (centre - half, centre + half)
    v = dict(requested=requested, realised=realised, n=draws, z=z, se=se, sd_per_draft=sd,
             interval=interval, expected=expected)
    if realised is None or draws <= 0:
        return Verdict(False, "injected acceptance could not be verified: the engine's metrics "
                       "showed no drafts over the point (are its metrics enabled, and does the "
                       "drafter propose on this content?)", **v)
    if draws < min_drafts:
        return Verdict(False, (
            f"the drafter proposed {draws:.0f} drafts (< min_drafts {min_drafts:g}); realised "
            f"AL {realised:.3f} vs requested {requested:g} is not evidence either way (the "
            f"{100 * confidence:g}% interval would be +/-{half:.3f}): lengthen the point (more "
            "requests or longer outputs) or use a drafter that proposes on this content"), **v)
    diff = realised - centre
    if abs(diff) > half:
        target = (f"the requested {requested:g}" if expected is None else
                  f"the {expected:.3f} the metric reads for the requested {requested:g} (the "
                  "last step of each request cut at its end)")
        return Verdict(False, (
            f"realised AL {realised:.3f} is {abs(diff):.3f} {'above' if diff > 0 else 'below'} "
            f"{target}, outside its {100 * confidence:g}% interval "
            f"[{interval[0]:.3f}, {interval[1]:.3f}] for {draws:.0f} draws (z {z:.2f} x SE "
            f"{se:.4f} + {floor:g}; per-draft sd {sd:.3f}): the engine did not apply the "
            "injected acceptance - check its injection knob reached the engine and that the "
            "metrics cover only the measured window"), **v)
    return Verdict(True, "", **v)
