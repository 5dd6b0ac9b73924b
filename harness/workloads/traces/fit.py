"""Fitting real traces onto small engines, recorded on the point (AgentX §6).

- cap: drop requests whose in + out exceed the cap (AgentX's `-256k` variant); the others keep
  their timestamps.
- scale: divide token counts and the block size by a factor; hash structure and timing stay, so
  prefix sharing and think times are the trace's, only smaller.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from harness.workloads.traces.model import SubAgent, Trace, TraceError, TraceRequest


@dataclass(frozen=True)
class Fit:
    mode: str = "none"  # none | cap | scale
    factor: int = 1  # scale: divide tokens and block size by this
    cap_tokens: int = 0  # cap: drop requests with in + out above this

    def describe(self) -> str:
        if self.mode == "scale":
            return f"scale/{self.factor}"
        if self.mode == "cap":
            return f"cap{self.cap_tokens}"
        return "none"


def _scale_items(items: list[TraceRequest | SubAgent], f: int) -> list[TraceRequest | SubAgent]:
    out: list[TraceRequest | SubAgent] = []
    for it in items:
        if isinstance(it, SubAgent):
            out.append(dataclasses.replace(it, items=_scale_items(it.items, f),
                                           prefix_tokens=round(it.prefix_tokens / f)))
        else:
            out.append(dataclasses.replace(
                it, in_tokens=max(1, round(it.in_tokens / f)),
                out_tokens=max(1, round(it.out_tokens / f))))
    return out


def _cap_items(items: list[TraceRequest | SubAgent], cap: int) -> list[TraceRequest | SubAgent]:
    out: list[TraceRequest | SubAgent] = []
    for it in items:
        if isinstance(it, SubAgent):
            kept = _cap_items(it.items, cap)
            if kept:
                out.append(dataclasses.replace(it, items=kept))
        elif it.in_tokens + it.out_tokens <= cap:
            out.append(it)
    return out


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in (2, 4, 8, 16, 32, 64, 128) if n % d == 0)


def fit_traces(traces: list[Trace], fit: Fit) -> list[Trace]:
    if fit.mode == "none":
        return traces
    if fit.mode == "scale":
        out = []
        for tr in traces:
            if fit.factor < 1 or tr.block_size % fit.factor:
                raise TraceError(
                    tr.source, f"trace {tr.id}", "block_size",
                    f"block size {tr.block_size} is not divisible by scale factor {fit.factor}",
                    f"use a factor that divides {tr.block_size} (e.g. {_divisors(tr.block_size)})",
                )
            out.append(dataclasses.replace(tr, block_size=tr.block_size // fit.factor,
                                           items=_scale_items(tr.items, fit.factor),
                                           prefix_tokens=round(tr.prefix_tokens / fit.factor)))
        return out
    if fit.mode == "cap":
        kept = [dataclasses.replace(tr, items=_cap_items(tr.items, fit.cap_tokens))
                for tr in traces]
        return [tr for tr in kept if tr.items]
    raise ValueError(f"unknown fit mode {fit.mode!r}")
