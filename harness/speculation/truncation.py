"""The AL an engine's metrics read under an injected acceptance when the last verify step of
each request is cut at its end (SGLang), given the window's output lengths. Pure.

SGLang appends a verify step's accepted tokens one by one and, once the request finishes
(max_tokens, EOS, stop), marks the rest rejected and recomputes the step's accept length
(`accept_index[i, j + 1:] = -1`, then `accept_length = (accept_index != -1).sum(dim=1) - 1`;
sgl-project/sglang:python/sglang/srt/speculative/eagle_info.py@f1f60ea0). That cut length is
what `update_spec_metrics` adds to the `sglang:spec_accept_length` gauge's interval
(python/sglang/srt/managers/scheduler_metrics_mixin.py@01bb3c80) and what the finished
request's generation count holds (the `spec_verify_calls_total` route). Over a window the
metric therefore reads decode tokens / verify steps, and a request of m decode tokens takes
E[S(m)] steps where the uncut steps would have emitted more than m: its last step reads short
by the overshoot, about (AL - 1) / 2 tokens. Negligible at 1k-token outputs (0.2%), but
agentic turns are short (median ~5 tokens in the AgentX traces): at AL 2.5, k 3 every
4-token reply takes exactly two steps and reads AL 2.0.

    S(m) = 0 for m <= 0;   E[S(m)] = 1 + sum_j P(accepted = j) E[S(m - 1 - j)]

with P(accepted >= i) = p_i, the injected per-position rates (harness.speculation.verify). The
metric is a ratio over the window, so its expectation is taken as sum(m) / sum(E[S(m)])."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def emit_probabilities(rates: Sequence[float]) -> list[float]:
    """P(a verify step emits 1 + j tokens), j = 0..k, from P(accepted >= i) = rates[i-1]."""
    ps = [1.0, *(float(p) for p in rates), 0.0]
    return [max(0.0, ps[j] - ps[j + 1]) for j in range(len(rates) + 1)]


def expected_steps(max_tokens: int, rates: Sequence[float]) -> list[float]:
    """E[verify steps] to emit m decode tokens with the last step cut, for m = 0..max_tokens."""
    probs = emit_probabilities(rates)
    steps = [0.0] * (max(0, max_tokens) + 1)
    for m in range(1, len(steps)):
        steps[m] = 1.0 + sum(p * steps[max(0, m - 1 - j)] for j, p in enumerate(probs) if p)
    return steps


def truncated_al(rates: Sequence[float], decode_tokens: Iterable[int]) -> float | None:
    """What a cut-at-finish metric reads over requests of these decode-token counts (output
    tokens less the one prefill emits); None without a request that decoded."""
    ms = [int(m) for m in decode_tokens if m > 0]
    if not ms:
        return None
    steps = expected_steps(max(ms), rates)
    return sum(ms) / sum(steps[m] for m in ms)
