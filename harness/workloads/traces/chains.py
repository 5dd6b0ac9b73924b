"""Parallel request chains inside one recorded agent (docs/replay.md, "Chains").

A captured agent (a sub-agent entry, or a trace's top-level requests) may hold several agents'
requests interleaved: parallel forks of its context, one-shot side calls, worker threads the
capture flattened. AIPerf splits them back by hash-id evidence and replays each chain as its
own stream (ai-dynamo/aiperf:src/aiperf/dataset/loader/
weka_agent_chains.py@0ba4a98c70d2e50df12589deae561db89b8a3694).
The rule, in our words:

- Requests are taken in (t, index) order. A request extends the chain whose last request's
  hash list is a complete prefix of its own and which had ended (t + api_time) by its start;
  the deepest such tail wins, ties to the lowest chain. Otherwise it founds a new chain, forked
  from the tail sharing the longest prefix with it.
- Seams: a fork from a tail that stayed that chain's last request, starting after the tail
  ended, is the same agent continuing after a context edit (compaction); the deepest such fork
  (then the earliest, then the lowest index) is spliced back onto its chain.
- A request without hash ids rides the main chain. The main chain is the one holding the first
  request; a single leading prefix-disjoint throwaway call (title generation: output <= 64, or
  no block reused anywhere) does not found it but rides it (weka_trace.py `_split_off_preamble`,
  SemiAnalysisAI/aiperf@2141c6217b7f051379eca54263cee8eb62767304).
Pure functions of the recorded requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.workloads.traces.model import TraceRequest

_EPS = 1e-6
_TITLE_GEN_MAX_OUT = 64
Indexed = tuple[int, float, TraceRequest]  # (index in the agent's listing, absolute t, request)


@dataclass
class _Chain:
    items: list[Indexed] = field(default_factory=list)
    tail: list[int] = field(default_factory=list)  # hash ids of the last hash-bearing request
    tail_index: int = -1
    tail_end: float = 0.0
    spliced: bool = False


def _lcp(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _extends(chains: list[_Chain], h: list[int], t: float) -> int | None:
    best, best_len = None, -1
    for i, c in enumerate(chains):
        n = len(c.tail)
        if n == 0 or n > len(h) or n <= best_len or c.tail_end > t + _EPS:
            continue
        if h[:n] == c.tail:
            best, best_len = i, n
    return best


def _fork_parent(chains: list[_Chain], h: list[int]) -> tuple[int | None, int]:
    best, key = None, (0, 0)
    for i, c in enumerate(chains):
        d = _lcp(c.tail, h) if c.tail else 0
        if d and (d, len(c.tail)) > key:
            best, key = i, (d, len(c.tail))
    return best, key[0]


def _preamble(items: list[Indexed]) -> tuple[list[Indexed], list[Indexed]]:
    if len(items) < 2 or not items[0][2].hash_ids:
        return [], items
    first, rest = items[0], items[1:]
    ids = first[2].hash_ids
    if any(r.hash_ids and _lcp(ids, r.hash_ids) > 0 for _, _, r in rest):
        return [], items
    if first[2].out_tokens > _TITLE_GEN_MAX_OUT:
        seen = {h for _, _, r in rest for h in r.hash_ids}
        if not seen.isdisjoint(ids):
            return [], items
    return [first], rest


def split_chains(items: list[Indexed]) -> list[list[Indexed]]:
    """The agent's chains: the main one first, then the others by first request."""
    ordered = sorted(items, key=lambda it: (it[1], it[0]))
    if not ordered:
        return [[]]
    preamble, ordered = _preamble(ordered)
    chains: list[_Chain] = []
    owner: dict[int, int] = {}
    forks: dict[int, list[tuple[int, int, float]]] = {}  # tail index -> (chain, depth, t)
    for it in ordered:
        idx, t, r = it
        if not r.hash_ids:  # no evidence: the main chain
            if not chains:
                chains.append(_Chain())
            chains[0].items.append(it)
            owner[idx] = 0
            continue
        target = _extends(chains, r.hash_ids, t)
        if target is None:
            parent, depth = _fork_parent(chains, r.hash_ids)
            target = len(chains)
            chains.append(_Chain())
            if parent is not None:
                forks.setdefault(chains[parent].tail_index, []).append((target, depth, t))
        c = chains[target]
        c.items.append(it)
        c.tail, c.tail_index, c.tail_end = list(r.hash_ids), idx, t + r.api_time
        owner[idx] = target
    _splice_seams(chains, forks, owner, {it[0]: it for it in ordered})
    main_i = owner[ordered[0][0]]
    main = sorted(preamble + chains[main_i].items, key=lambda it: (it[1], it[0]))
    others = [c.items for i, c in enumerate(chains) if not c.spliced and i != main_i]
    others.sort(key=lambda items: (items[0][1], items[0][0]))
    return [main, *others]


def _splice_seams(chains: list[_Chain], forks: dict[int, list[tuple[int, int, float]]],
                  owner: dict[int, int], by_index: dict[int, Indexed]) -> None:
    for tail_index in sorted(forks):
        home = owner[tail_index]  # owners follow splices
        c = chains[home]
        if c.items[-1][0] != tail_index:
            continue  # the longer state lived on: every fork is a spawn
        _, t0, r0 = by_index[tail_index]
        end = t0 + r0.api_time
        cands = [(d, -t, -ci, ci) for ci, d, t in forks[tail_index]
                 if d > 0 and end <= chains[ci].items[0][1] + _EPS]
        if not cands:
            continue
        elected = max(cands)[3]
        moved = chains[elected]
        c.items.extend(moved.items)
        for idx, _, _ in moved.items:
            owner[idx] = home
        moved.spliced = True
