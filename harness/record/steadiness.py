"""Whether the engine decoded steadily through a point's window: requests of one shape at one
load should decode alike, so the slowest tenth of them decoding far below the median says
something outside the workload slowed the engine (a neighbour, a throttled clock, a swap),
docs/host.md "The engine's steadiness". Pure functions of a point's `RequestRecord`s; the rule
itself is harness.record.bench_rules.steadiness_rules.

A request's decode rate is its decode steps per second between its first and last token.
Without speculation every step emits one token: (completion_tokens - 1) / (last - first).
A speculative step emits one token plus the drafts it accepted, and requests accept
differently by content, so where the reply carries the request's accepted drafts (llama.cpp's
`timings.draft_n_accepted`) the rate counts steps: (completion_tokens - 1 - accepted) /
(last - first). A speculative point without per-request counts is not judged: its token rates
spread with each request's acceptance, not with the engine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from harness.records import RequestRecord

# Fewest judged requests that make a slowest tenth and a median that are not the same request.
MIN_REQUESTS = 5
# Requests named in a rule's message (the rest are counted).
NAMED = 5


def decode_rate(r: RequestRecord, speculative: bool) -> float:
    """Decode steps per second of one request (NaN: not judged, see the module's note)."""
    if not r.ok or r.completion_tokens < 2:
        return math.nan
    span = r.last_token_ts - r.first_token_ts
    if not span > 0:
        return math.nan
    steps = r.completion_tokens - 1
    if speculative:
        if r.spec_accepted_tokens < 0:
            return math.nan
        steps -= r.spec_accepted_tokens
        if steps < 1:
            return math.nan
    return steps / span


def steadiness_figures(records: Iterable[RequestRecord], speculative: bool = False,
                       window_start: float | None = None) -> dict[str, Any]:
    """The point's decode-rate spread: `decode_rate_median` (steps/s), `decode_slow_ratio` (the
    mean rate of the slowest ceil(n/10) requests over the median), `decode_judged` (requests
    judged) and `decode_slowest`: the slowest tenth, slowest first, each with its id, its rate
    against the median and when it decoded (seconds from `window_start`, else from the
    earliest send). Empty when fewer than MIN_REQUESTS requests can be judged."""
    recs = list(records)
    rated = [(decode_rate(r, speculative), r) for r in recs]
    rated = [(v, r) for v, r in rated if math.isfinite(v)]
    if len(rated) < MIN_REQUESTS:
        return {}
    rated.sort(key=lambda vr: vr[0])
    rates = np.array([v for v, _ in rated])
    median = float(np.median(rates))
    k = math.ceil(len(rated) / 10)
    if window_start is None:
        sends = [r.send_ts for r in recs if math.isfinite(r.send_ts)]
        window_start = min(sends) if sends else rated[0][1].first_token_ts
    slowest = [{"id": r.request_id, "ratio": round(v / median, 4),
                "from_s": round(r.first_token_ts - window_start, 3),
                "to_s": round(r.last_token_ts - window_start, 3)}
               for v, r in rated[:k]]
    return {"decode_rate_median": median,
            "decode_slow_ratio": float(rates[:k].mean() / median),
            "decode_judged": len(rated), "decode_slowest": slowest}


def slow_text(slowest: Sequence[dict[str, Any]], bound: float) -> str:
    """The requests under `bound` of the median, named: "r7 at 0.31x (4.2-6.8 s), ..."."""
    under = [s for s in slowest if s.get("ratio", 1.0) < bound] or list(slowest)
    named = ", ".join(f"{s['id']} at {s['ratio']:.2f}x ({s['from_s']:.1f}-{s['to_s']:.1f} s)"
                      for s in under[:NAMED])
    more = len(under) - NAMED
    return named + (f" and {more} more" if more > 0 else "")
