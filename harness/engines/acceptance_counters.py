"""The acceptance length an engine realised over a window, from its counters or its sampled AL
gauge, and how many independent draws that AL averages (docs/engine-metrics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.engines.counter_types import AcceptanceGauge, EngineCounters, SpecCounters
from harness.engines.engine_counters import resolve
from harness.engines.prometheus import Sample
from harness.engines.series import Labels, Series, label_text
from harness.engines.series import delta as _delta


@dataclass(frozen=True)
class RealisedAcceptance:
    al: float | None
    source: Literal["counters", "gauge-sampled"] | None
    drafts: float | None = None  # counters: request verify steps; gauge: steps, estimated
    accepted_tokens: float | None = None
    draft_tokens: float | None = None
    drafts_estimated: bool = False  # drafts inferred (gauge intervals x steps, or tokens / k)
    per_rank: dict[str, float] = field(default_factory=dict)  # AL per reporting rank
    samples: int = 0  # gauge readings used (distinct values for an interval-mean gauge)
    reason: str = ""  # why al is None, or a caveat
    # The metric counts only the tokens a request's finishing step kept (SGLang): it reads
    # short on short outputs, and an injected AL is judged against harness.speculation.truncation.
    truncated_at_finish: bool = False


def realised_acceptance(c: EngineCounters, before: Sample, after: Sample,
                        samples: Sequence[tuple[float, Sample]] = (), *,
                        k: int | None = None) -> RealisedAcceptance:
    """The AL the engine realised over the window [before, after].

    From cumulative counters when the engine has them (and they moved); else from the AL
    gauge sampled through the window (`samples`: (time, scrape) pairs, e.g. every second),
    averaged over its readings from every reporting rank (label set) - never summed (see
    `_from_gauge`). `k` (draft length) lets TensorRT-LLM's iteration counters stand in for
    its per-request ones. `per_rank` holds each rank's AL where the metrics tell ranks apart."""
    r = resolve(c, after)
    if r is None:
        return RealisedAcceptance(None, None, reason="no known engine's metrics in the scrape")
    if r.spec is not None:
        got = _from_counters(r.spec, before, after, k)
        if got.al is not None:
            return got
    if r.al_gauge is not None and r.al_gauge.semantics != "lifetime" and samples:
        return _from_gauge(r.al_gauge, samples, before, after)
    if r.spec is None and r.al_gauge is None:
        return RealisedAcceptance(None, None, reason=f"{r.kind} declares no speculative metrics")
    hint = f" (launch needs {', '.join(r.launch_requirements)})" if r.launch_requirements else ""
    return RealisedAcceptance(None, None, reason=(
        f"{r.kind}: no speculative counters moved over the window and no AL gauge samples "
        f"were taken during it{hint}"))


def _per_rank_counters(spec: SpecCounters, before: Sample, after: Sample) -> dict[str, float]:
    """AL per dp rank from counters that carry a rank label (vLLM's `engine`)."""
    if spec.rank_label is None or spec.drafts is None or spec.accepted is None:
        return {}

    def by_rank(series: Series) -> dict[str, float]:
        a, b = series.by_labels(after), series.by_labels(before)
        out: dict[str, float] = {}
        for labels, value in a.items():
            rank = dict(labels).get(spec.rank_label or "", "-")
            out[rank] = out.get(rank, 0.0) + value - b.get(labels, 0.0)
        return out

    drafts, accepted = by_rank(spec.drafts), by_rank(spec.accepted)
    return {f"{spec.rank_label}={rank}": 1.0 + accepted.get(rank, 0.0) / d
            for rank, d in sorted(drafts.items()) if d > 0}


def _from_counters(spec: SpecCounters, before: Sample, after: Sample,
                   k: int | None) -> RealisedAcceptance:
    drafts = _delta(spec.drafts, before, after)
    draft_tokens = _delta(spec.draft_tokens, before, after)
    if spec.generation is not None:  # SGLang: derived from tokens
        accepted = _derived_accepted(spec, before, after, drafts) if drafts else None
    else:
        accepted = _delta(spec.accepted, before, after)
    estimated = False
    if not drafts and spec.per_k is not None and k:
        tokens, acc = (_delta(s, before, after) for s in spec.per_k)
        if tokens:
            drafts, draft_tokens, accepted, estimated = tokens / k, tokens, acc, True
    if not drafts:
        return RealisedAcceptance(None, "counters", reason="the drafts counter did not move")
    if accepted is None:
        return RealisedAcceptance(None, "counters", drafts=drafts,
                                  reason="the accepted-tokens counter is missing")
    caveat = ("accepted tokens past max_tokens/EOS are not counted: AL reads low by about "
              "(AL-1)/2 tokens per request" if spec.truncated_at_finish else "")
    return RealisedAcceptance(1.0 + accepted / drafts, "counters", drafts=drafts,
                              accepted_tokens=accepted, draft_tokens=draft_tokens,
                              drafts_estimated=estimated,
                              per_rank=_per_rank_counters(spec, before, after), reason=caveat,
                              truncated_at_finish=spec.truncated_at_finish)


def _derived_accepted(spec: SpecCounters, before: Sample, after: Sample,
                      drafts: float) -> float | None:
    """Every verify step emits 1 + accepted tokens and every request one more from prefill:
    accepted = generated - verify steps - requests."""
    gen, reqs = _delta(spec.generation, before, after), _delta(spec.requests, before, after)
    if gen is None:
        return None
    return max(0.0, gen - drafts - (reqs or 0.0))


def _from_gauge(g: AcceptanceGauge, samples: Sequence[tuple[float, Sample]],
                before: Sample | None = None, after: Sample | None = None
                ) -> RealisedAcceptance:
    """The mean of the gauge's readings over every reporting rank (label set) - never their
    sum; `per_rank` keeps each rank's own mean. Zero and NaN readings (a rank that has not
    decoded yet) are left out.

    An interval-mean gauge (SGLang) is averaged over its distinct readings: each new value is
    one decode-log interval of `interval_steps` forward passes of one rank, so equal weights
    are step weights, pooled over ranks: a rank that logged ten intervals in the window did
    ten times the steps of a rank that logged one, and a mean of per-rank means would weight
    them alike (ranks do unequal work: a router pins sessions to dp ranks, and with the cut
    at a request's end a rank serving shorter replies reads lower). Averaging every sample
    instead would weight an interval by how long it lasted, and intervals whose requests
    finished early (high AL) are short: a low bias. Drafts are then estimated as distinct
    readings x interval_steps (consecutive equal intervals count once: an underestimate, so
    verification errs towards wider intervals). The window's bounds count for it too: a
    value the scrape `before` the window already showed is an interval logged before it (the
    warmup's), and a value first seen `after` it is one the window completed after the last
    sample. A last-iteration gauge (TensorRT-LLM) is averaged over the samples, pooled
    likewise."""
    distinct = g.semantics == "interval-mean"
    series = Series(g.name)
    last = dict(series.by_labels(before)) if distinct and before else {}
    ordered = [s for _, s in sorted(samples, key=lambda ts: ts[0])]
    per_rank: dict[Labels, list[float]] = {}
    for sample in ordered + ([after] if distinct and after else []):
        for labels, value in series.by_labels(sample).items():
            if not (value > 0 and math.isfinite(value)):
                continue
            if distinct and last.get(labels) == value:
                continue
            last[labels] = value
            per_rank.setdefault(labels, []).append(value)
    if not per_rank:
        return RealisedAcceptance(None, "gauge-sampled", samples=len(samples),
                                  reason=f"{g.name} was never above 0, or never changed, in "
                                  "the window")
    means = {label_text(lab, drop=("model_name", "engine_type")): sum(v) / len(v)
             for lab, v in per_rank.items()}
    readings = sum(len(v) for v in per_rank.values())
    pooled = sum(sum(v) for v in per_rank.values()) / readings
    steps = readings * g.interval_steps if distinct and g.interval_steps else None
    return RealisedAcceptance(pooled, "gauge-sampled", drafts=steps,
                              drafts_estimated=True, per_rank=dict(sorted(means.items())),
                              samples=readings, truncated_at_finish=g.truncated_at_finish)


def independent_draws(c: EngineCounters, r: RealisedAcceptance,
                      mean_batch: float | None = None) -> float | None:
    """The n that `harness.speculation.verify.verify` needs: how many independent accepted-count
    draws the realised AL averages.

    Per-request injection (vLLM, TensorRT-LLM, ATOM, llama.cpp): the drafts. Per-batch
    injection (SGLang match-expected, one draw per verify step of a rank): the sampled gauge
    already counts steps (distinct readings x interval); a request-level drafts counter must be
    divided by the mean running batch per rank (e.g. concurrency / dp); None without it."""
    if r.drafts is None:
        return None
    if c.injection_draw == "batch" and r.source == "counters":
        return r.drafts / mean_batch if mean_batch else None
    return r.drafts
