"""`harness traces stats` over a streamed corpus: the same figures as `trace_stats`, computed
one trace at a time, so a corpus never has to be held to be described.

Memory is O(requests) (three floats each, for the percentiles) plus one trace's prefix trie:
AgentX's hash ids are scoped per trace (`hash_id_scope: local`), so each trace's infinite-cache
hit rate is computed on a trie of its own and the totals add up to the whole corpus's rate.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.workloads.traces.model import Trace
from harness.workloads.traces.stats import PrefixTrie, TraceStats, _pct, hit_tokens


@dataclass
class StreamingStats:
    sessions: int = 0
    requests: int = 0
    subagents: int = 0
    longest: int = 0  # in + out of the longest request (the fit check)
    isl: array = field(default_factory=lambda: array("d"))
    osl: array = field(default_factory=lambda: array("d"))
    think: array = field(default_factory=lambda: array("d"))
    block_sizes: set[int] = field(default_factory=set)
    hit: int = 0
    prompt: int = 0
    shared: PrefixTrie = field(default_factory=PrefixTrie)  # traces of a shared id scope

    def add(self, tr: Trace) -> None:
        # ids of a local scope are the trace's own: its own trie needs no scope in its keys
        trie = self.shared if tr.shared_scope else PrefixTrie()
        self.sessions += 1
        self.subagents += len(tr.subagents())
        self.block_sizes.add(tr.block_size)
        for r in tr.requests():
            self.requests += 1
            self.isl.append(r.in_tokens)
            self.osl.append(r.out_tokens)
            self.think.append(r.think)
            self.longest = max(self.longest, r.in_tokens + r.out_tokens)
            matched = trie.match_and_insert(r.hash_ids)
            self.hit += hit_tokens(matched, tr.block_size, r.in_tokens)
            self.prompt += r.in_tokens

    def result(self, files: int = 1) -> TraceStats:
        return TraceStats(
            files=files, sessions=self.sessions, requests=self.requests,
            subagents=self.subagents, isl=_pct(self.isl), osl=_pct(self.osl),
            think_s=_pct(self.think), block_sizes=sorted(self.block_sizes),
            hit_rate=self.hit / self.prompt if self.prompt else float("nan"),
        )


def streaming_stats(traces: Iterable[Trace]) -> StreamingStats:
    acc = StreamingStats()
    for tr in traces:
        acc.add(tr)
    return acc
