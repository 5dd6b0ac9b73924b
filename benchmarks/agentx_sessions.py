"""Generated sessions with AgentX's lengths, for benchmarks/agentic_scale.py: input tokens
lognormal with p50 95k and p99 506k, capped at 1M, in 64-token blocks, on a 15k-token system
prompt; a history that grows every turn by a tool result and the recorded reply. A lane holds
only what the next body needs (the last two requests' hash ids)."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

import numpy as np

from harness.workloads.replay_context import ReplayContext
from harness.workloads.traces.model import Trace, TraceRequest

BLOCK = 64
P50, P99, CAP = 95_000, 506_000, 1_000_000
SYSTEM_TOKENS = 15_000  # Claude Code's tools + system prompt, about (trace_0277: 15,041)


@dataclass
class Lane:
    """One generated session: the requests so far (older ones emptied: only the last two
    matter to the next body) and how it grows."""

    index: int
    rng: np.random.Generator
    trace: Trace
    ctx: ReplayContext
    chain: list[TraceRequest] = field(default_factory=list)

    def grow(self, tokens: int, out: int) -> TraceRequest:
        # Hash ids as array('q'): a sequence like the loaders' lists, but compact (8 bytes an
        # id, no int objects) and nothing for the garbage collector to walk.
        prev = self.chain[-1].hash_ids if self.chain else array("q")
        n = tokens // BLOCK
        ids = prev[:n] + array("q", range(len(prev), n)) if n > len(prev) else prev[:n]
        r = TraceRequest(t=float(len(self.chain)), in_tokens=tokens, out_tokens=out,
                         hash_ids=ids)
        if len(self.chain) >= 2:
            self.chain[-2].hash_ids = array("q")  # never read again: its state is kept
        self.chain.append(r)
        return r

    def next_turn(self) -> TraceRequest:
        last = self.chain[-1]
        add = int(self.rng.integers(500, 4000))
        return self.grow(min(CAP, last.in_tokens + last.out_tokens + add),
                         int(self.rng.integers(100, 1000)))


def make_lane(i: int, seed: int) -> Lane:
    rng = np.random.default_rng([seed, i])
    sigma = math.log(P99 / P50) / 2.3263  # z(0.99)
    target = int(min(CAP, max(SYSTEM_TOKENS + 2 * BLOCK, rng.lognormal(math.log(P50), sigma))))
    trace = Trace(f"gen{i}", "generated", BLOCK, [], prefix_tokens=SYSTEM_TOKENS)
    session = f"L{i}S1"
    ctx = ReplayContext(i, session, ("bench", session), trace)
    lane = Lane(i, rng, trace, ctx)
    ctx.chain = lane.chain  # the stream the bodies walk (set even where the field is absent)
    for k in range(1, 5):  # history before the start point: a few large turns
        lane.grow(max(SYSTEM_TOKENS + BLOCK, target * k // 5), int(rng.integers(100, 1000)))
    lane.grow(target, int(rng.integers(100, 1000)))  # the primer
    return lane
