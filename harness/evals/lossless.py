"""Is speculative decoding lossless on this engine? The same prompts sent to the engine with
and without the speculator (the same build), compared token by token (docs/evals.md).

- Temperature 0: the share of prompts whose outputs are token-identical; for each divergence
  its first position and the two tokens there. Speculation is meant to be exact here.
- Above 0: speculation is meant to leave the output distribution unchanged. For each prompt
  and each of the first N positions, the tokens sampled there by the two servers (independent
  seeds) form a two-sample contingency table; its chi-square statistic is judged by a
  permutation test (exact for the small samples this takes, no scipy needed), and the smallest
  p-value, Bonferroni-corrected over every (prompt, position), is compared with alpha.

Pure comparisons; `collect` does the HTTP (stdlib, a thread per request in flight).
"""

from __future__ import annotations

import json
import math
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.client.plain_http import open_no_redirect

END = "<end>"  # the category of a position past a continuation's end


@dataclass(frozen=True, slots=True)
class Divergence:
    prompt: int  # index of the prompt
    position: int  # first token position where the outputs differ
    reference: str  # the token without the speculator (END: its output had ended)
    speculative: str  # the token with it
    # The reference's log-probability of its own token minus that of the speculative token
    # there (nats), from its top logprobs; None when the speculative token is not among them
    # or an output ended: a gap too wide to call a near-tie.
    margin: float | None = None


@dataclass(frozen=True, slots=True)
class GreedyVerdict:
    temperature: float
    prompts: int
    identical: int
    divergences: tuple[Divergence, ...]
    # Divergences where the reference preferred its token by at most this many nats are
    # near-ties: floating-point differences between a batched verify pass and single-token
    # decoding flip them, with no error in the verifier (lossless.tie_margin; 0 = strict).
    tie_margin: float = 0.0

    @property
    def diverged_share(self) -> float:
        return 1.0 - self.identical / self.prompts if self.prompts else math.nan

    @property
    def near_ties(self) -> bool:
        """Every divergence at a near-tie of the reference (and at least one)."""
        return bool(self.divergences) and self.tie_margin > 0 and all(
            d.margin is not None and d.margin <= self.tie_margin for d in self.divergences)

    @property
    def widest_margin(self) -> float | None:
        known = [d.margin for d in self.divergences if d.margin is not None]
        return max(known) if known and len(known) == len(self.divergences) else None

    @property
    def ok(self) -> bool:
        return self.prompts > 0 and (self.identical == self.prompts or self.near_ties)


@dataclass(frozen=True, slots=True)
class SampledVerdict:
    temperature: float
    prompts: int
    samples: int
    positions: int
    tests: int  # (prompt, position) tables with more than one token seen
    min_p: float  # smallest permutation p-value
    p_adjusted: float  # min_p x tests (Bonferroni), at most 1
    alpha: float
    worst: tuple[int, int] | None  # (prompt, position) of the smallest p

    @property
    def ok(self) -> bool:
        return not self.p_adjusted < self.alpha


def first_divergence(ref: Sequence[str], spec: Sequence[str]) -> int | None:
    """The first position where two token sequences differ (one ending counts), or None."""
    for i, (a, b) in enumerate(zip(ref, spec, strict=False)):
        if a != b:
            return i
    return None if len(ref) == len(spec) else min(len(ref), len(spec))


Tops = list[dict[str, float]]  # per position: token -> log-probability (its top logprobs)


def margin_at(tops: Tops | None, pos: int, ref_token: str, spec_token: str) -> float | None:
    """How much the reference preferred its token over the speculative one at `pos`."""
    if tops is None or pos >= len(tops):
        return None
    lp = tops[pos]
    if ref_token not in lp or spec_token not in lp:
        return None
    return round(lp[ref_token] - lp[spec_token], 6)


def compare_greedy(ref: Sequence[Sequence[str]], spec: Sequence[Sequence[str]],
                   temperature: float = 0.0, ref_tops: Sequence[Tops] | None = None,
                   tie_margin: float = 0.0) -> GreedyVerdict:
    divs = []
    for i, (a, b) in enumerate(zip(ref, spec, strict=True)):
        pos = first_divergence(a, b)
        if pos is not None:
            ra, sb = a[pos] if pos < len(a) else END, b[pos] if pos < len(b) else END
            margin = margin_at(ref_tops[i] if ref_tops else None, pos, ra, sb)
            divs.append(Divergence(i, pos, ra, sb, margin))
    return GreedyVerdict(temperature, len(ref), len(ref) - len(divs), tuple(divs), tie_margin)


def chi2_statistics(group1: np.ndarray, onehot: np.ndarray, n1: int) -> np.ndarray:
    """Pearson's chi-square of 2 x K tables, one per row of `group1` (R x n, 1 where the
    sample is in the second group): the table's rows are the groups, its columns the tokens
    (`onehot`, n x K)."""
    total = onehot.sum(0)  # K
    c1 = group1 @ onehot  # R x K
    c0 = total - c1
    n = onehot.shape[0]
    e1, e0 = total * (n1 / n), total * ((n - n1) / n)
    return (((c1 - e1) ** 2) / e1 + ((c0 - e0) ** 2) / e0).sum(1)


def permutation_p(a: Sequence[str], b: Sequence[str], rng: np.random.Generator,
                  rounds: int = 20_000) -> float | None:
    """Two-sample test of token distributions at one position: the chi-square statistic's
    permutation p-value, all permutations at once (None when both samples saw one and the
    same token). 20,000 rounds resolve p down to 5e-5, below alpha / tests for the checks
    this runs."""
    values = list(a) + list(b)
    names = {t: i for i, t in enumerate(sorted(set(values)))}
    if len(names) < 2:
        return None
    onehot = np.eye(len(names))[[names[t] for t in values]]
    labels = np.array([0.0] * len(a) + [1.0] * len(b))
    observed = chi2_statistics(labels[None, :], onehot, len(b))[0]

    def p_value(r: int) -> float:
        perms = rng.permuted(np.tile(labels, (r, 1)), axis=1)
        hits = int((chi2_statistics(perms, onehot, len(b)) >= observed - 1e-9).sum())
        return (hits + 1) / (r + 1)

    first = p_value(min(rounds, 1000))  # most positions are plainly alike: stop there
    return first if first > 0.05 or rounds <= 1000 else p_value(rounds)


def compare_sampled(ref: Sequence[Sequence[Sequence[str]]],
                    spec: Sequence[Sequence[Sequence[str]]], temperature: float,
                    positions: int, alpha: float, seed: int = 0) -> SampledVerdict:
    """ref[p][s]: the s-th sampled continuation of prompt p without the speculator."""
    rng = np.random.default_rng(seed)
    best, worst, tests = 1.0, None, 0
    for p, (xs, ys) in enumerate(zip(ref, spec, strict=True)):
        for pos in range(positions):
            a = [x[pos] if pos < len(x) else END for x in xs]
            b = [y[pos] if pos < len(y) else END for y in ys]
            pv = permutation_p(a, b, rng)
            if pv is None:
                continue
            tests += 1
            if pv < best:
                best, worst = pv, (p, pos)
    samples = len(ref[0]) if ref else 0
    return SampledVerdict(temperature, len(ref), samples, positions, tests, best,
                          min(1.0, best * max(tests, 1)), alpha, worst)


@dataclass
class LosslessResult:
    """What a speculative point records: per temperature, the verdict and its evidence."""

    greedy: list[GreedyVerdict] = field(default_factory=list)
    sampled: list[SampledVerdict] = field(default_factory=list)
    # T=0 control: the reference server's outputs against a second pass of the same prompts.
    # If the engine is not deterministic without the speculator, a divergence with it is not
    # the speculator's doing: the verdict is then inconclusive and fails nothing.
    control: GreedyVerdict | None = None
    # The T=0 comparison again with one request in flight, and its control, when the batched
    # one was not a clean identity (lossless.serial_retry): exactness without batching's
    # numerics.
    serial: GreedyVerdict | None = None
    serial_control: GreedyVerdict | None = None
    spec_drafts: float | None = None  # drafts the speculative side made during the check
    spec_accepted: float | None = None  # draft tokens it accepted
    settings: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # why it was not run, when it was not

    @property
    def deterministic(self) -> bool:
        return self.control is None or self.control.ok

    @property
    def serial_conclusive(self) -> bool:
        return self.serial is not None and (self.serial_control is None
                                            or self.serial_control.ok)

    @property
    def ok(self) -> bool:
        """Lossy at T=0 when a comparison whose control repeated itself diverged beyond the
        tie margin: the batched one, or the one made one request at a time. A comparison whose
        control did not repeat itself is inconclusive and fails nothing."""
        batched_lossy = self.deterministic and not all(g.ok for g in self.greedy)
        serial_lossy = self.serial_conclusive and self.serial is not None and not self.serial.ok
        return not batched_lossy and not serial_lossy and all(s.ok for s in self.sampled)

    @property
    def ran(self) -> bool:
        return bool(self.greedy or self.sampled)

    def verdict(self) -> str:
        """One line: lossless / diverges at temperature 0 in X% of prompts / distribution
        differs at p < alpha."""
        if not self.ran:
            return f"not checked: {self.note}" if self.note else "not checked"
        parts = [f"T={g.temperature:g}: {_greedy_text(g)}" for g in self.greedy]
        for s in self.sampled:
            parts.append(f"T={s.temperature:g}: distribution differs at p < {s.alpha:g} "
                         f"(adjusted p {s.p_adjusted:.2g})" if not s.ok else
                         f"T={s.temperature:g}: same distribution (adjusted p "
                         f"{s.p_adjusted:.2g} over {s.tests} tests)")
        engaged = ("" if self.spec_accepted is None else
                   f"; {self.spec_accepted:.0f} draft tokens accepted")
        if self.control is not None:
            c = self.control
            engaged += (f"; control (no speculator, twice): {c.identical}/{c.prompts} identical"
                        + ("" if c.ok else ": the engine is not deterministic at T=0 with "
                           "requests in flight, so those divergences are inconclusive"))
        if self.serial is not None:
            sv, sc = self.serial, self.serial_control
            engaged += ("; one request at a time: " + _greedy_text(sv)
                        + ("" if sc is None else f" (control {sc.identical}/{sc.prompts}"
                           + ("" if sc.ok else ": not deterministic either, inconclusive")
                           + ")"))
        head = "lossless" if self.ok else "LOSSY"
        return f"{head}: " + "; ".join(parts) + engaged

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok if self.ran else None, "verdict": self.verdict(),
                "greedy": [{**asdict(g), "diverged_share": g.diverged_share}
                           for g in self.greedy],
                "sampled": [{**asdict(s), "ok": s.ok} for s in self.sampled],
                "control": asdict(self.control) if self.control else None,
                "serial": asdict(self.serial) if self.serial else None,
                "serial_control": asdict(self.serial_control) if self.serial_control else None,
                "spec_drafts": self.spec_drafts, "spec_accepted": self.spec_accepted,
                "settings": self.settings, "note": self.note}


def _greedy_text(g: GreedyVerdict) -> str:
    if g.identical == g.prompts:
        return f"token-identical on {g.identical}/{g.prompts}"
    text = (f"diverges in {100 * g.diverged_share:.0f}% of prompts "
            f"({g.prompts - g.identical}/{g.prompts}; first at token "
            f"{min(d.position for d in g.divergences)})")
    if g.near_ties:
        text += (f", every one at a near-tie of the reference (widest margin "
                 f"{g.widest_margin:.3g} nats <= tie_margin {g.tie_margin:g}): numerics, "
                 "not the verifier")
    elif g.tie_margin > 0:
        wide = sum(1 for d in g.divergences if d.margin is None or d.margin > g.tie_margin)
        text += f", {wide} beyond the tie margin {g.tie_margin:g} nats"
    return text


# ---- prompts and collection ---------------------------------------------------------------
def slice_prompts(repo: Path, n: int) -> list[str]:
    """The first n questions of the GSM8K slice shipped in the repository (data/evals)."""
    path = repo / "data" / "evals" / "gsm8k" / "test.jsonl"
    lines = path.read_text().splitlines()[:n]
    return [json.loads(line)["question"] for line in lines]


def _post(url: str, body: dict[str, Any], headers: dict[str, str],
          timeout_s: float) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **headers})
    with open_no_redirect(req, timeout=timeout_s) as r:  # the API key stays with the server
        return json.loads(r.read())


def tokens_of(reply: dict[str, Any]) -> list[str]:
    """The generated tokens of a chat completion, from its logprobs (what the engine sampled,
    token by token; text alone could hide a different tokenisation of the same string)."""
    choice = reply["choices"][0]
    content = (choice.get("logprobs") or {}).get("content")
    if content is None:
        raise ValueError("the server returned no logprobs.content: the lossless check needs "
                         "per-token output (chat completions with logprobs=true)")
    return [str(c.get("token")) for c in content]


def tops_of(reply: dict[str, Any]) -> Tops:
    """Per generated token, the log-probabilities the engine reported: its top logprobs and
    the token it chose."""
    out = []
    for c in reply["choices"][0]["logprobs"]["content"]:
        lp = {str(t.get("token")): float(t["logprob"]) for t in c.get("top_logprobs") or []
              if t.get("logprob") is not None}
        if c.get("logprob") is not None:
            lp.setdefault(str(c.get("token")), float(c["logprob"]))
        out.append(lp)
    return out


def collect(base_url: str, model: str, prompts: Sequence[str], max_tokens: int,
            temperature: float, seeds: Sequence[int], concurrency: int = 4,
            headers: dict[str, str] | None = None, extras: dict[str, Any] | None = None,
            timeout_s: float = 600.0) -> list[list[list[str]]]:
    """out[p][s]: the tokens generated for prompt p with seed s (chat template applied by the
    server)."""
    replies = _replies(base_url, model, prompts, max_tokens, temperature, seeds, concurrency,
                       headers, extras, timeout_s)
    return [[tokens_of(r) for r in per] for per in replies]


def collect_scored(base_url: str, model: str, prompts: Sequence[str], max_tokens: int,
                   seed: int, concurrency: int, top: int,
                   headers: dict[str, str] | None = None,
                   extras: dict[str, Any] | None = None
                   ) -> tuple[list[list[str]], list[Tops]]:
    """Greedy outputs, one per prompt, with each position's top `top` log-probabilities:
    the reference side of the T=0 comparison, whose margins tell a near-tie."""
    replies = _replies(base_url, model, prompts, max_tokens, 0.0, [seed], concurrency,
                       headers, {**(extras or {}), **({"top_logprobs": top} if top else {})})
    return [tokens_of(r[0]) for r in replies], [tops_of(r[0]) for r in replies]


def _replies(base_url: str, model: str, prompts: Sequence[str], max_tokens: int,
             temperature: float, seeds: Sequence[int], concurrency: int,
             headers: dict[str, str] | None, extras: dict[str, Any] | None,
             timeout_s: float = 600.0) -> list[list[dict[str, Any]]]:
    url = base_url.rstrip("/") + "/v1/chat/completions"

    def one(job: tuple[int, int]) -> dict[str, Any]:
        p, s = job
        body = {"model": model, "messages": [{"role": "user", "content": prompts[p]}],
                "max_tokens": max_tokens, "temperature": temperature, "top_p": 1.0,
                "seed": seeds[s], "logprobs": True, "stream": False, **(extras or {})}
        return _post(url, body, headers or {}, timeout_s)

    jobs = [(p, s) for p in range(len(prompts)) for s in range(len(seeds))]
    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        flat = list(pool.map(one, jobs))
    it = iter(flat)
    return [[next(it) for _ in seeds] for _ in prompts]
