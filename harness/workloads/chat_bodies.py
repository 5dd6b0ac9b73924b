"""The message structure of an AgentX request, as AIPerf's Weka loader rebuilds it from hash ids
(ai-dynamo/aiperf:src/aiperf/dataset/loader/weka_synth_buf.py@1848624113dc8b624bd3f408648664d46fee9073,
`ConversationReconstructor`; docs/upstream/agentx.md §4), and its bytes on the wire.

A stream (a session's main agent, or one sub-agent) is a list of requests whose hash ids grow.
Its messages tile the request's blocks:
- turn 0: a system message of ceil((tool + system tokens) / block) blocks, the rest user;
- turn k: the previous messages cut at the longest common block prefix of the two requests'
  ids; of the new blocks, the first ceil(previous output / block) are the assistant's reply
  (the recorded one, pre-canned: DELTAS_WITH_RESPONSES), the rest a user message;
- tokens beyond the listed blocks (the partial last block, or blocks the trace did not list)
  are the request's own, at the end of its last message; the next turn drops them.
So message contents hold exactly `in` tokens and any two requests share their token prefix as
far as their block ids (and message boundaries) agree.

One difference from AIPerf (docs/settings.md): when the cut falls at the end of a message that
is followed by a tail-only user message, AIPerf strips the tail's length from the message
before it (`truncate_synth_buf_at_block`'s boundary case), which shortens a recorded reply
and the next prompt; here the tail-only message is dropped and the reply kept whole.

Segments are block ranges over the request's own ids (every kept block has the same id in both
requests), so a lane's state is a few integers per message, never text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from harness.workloads.traces.model import TraceRequest

SYSTEM, USER, ASSISTANT = "system", "user", "assistant"


@dataclass(frozen=True, slots=True)
class Segment:
    role: str
    start: int  # first block (index into the request's hash ids)
    end: int  # one past its last block


def covered_blocks(r: TraceRequest, block_size: int) -> int:
    """Whole blocks of the request that come from its listed hash ids."""
    return min(r.in_tokens // block_size, len(r.hash_ids))


def common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    if a[:n] == b[:n]:  # the common case (a growing history), compared in C
        return n
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def first_turn(r: TraceRequest, block_size: int, prefix_tokens: int) -> list[Segment]:
    covered = covered_blocks(r, block_size)
    system = min(math.ceil(prefix_tokens / block_size), covered) if prefix_tokens > 0 else 0
    segs = [Segment(SYSTEM, 0, system)] if system else []
    segs.append(Segment(USER, system, covered))
    return segs


def next_turn(segs: list[Segment], prev: TraceRequest, r: TraceRequest,
              block_size: int) -> list[Segment]:
    covered = covered_blocks(r, block_size)
    lcp = common_prefix(prev.hash_ids, r.hash_ids, min(covered, covered_blocks(prev, block_size)))
    kept = [s if s.end <= lcp else Segment(s.role, s.start, lcp) for s in segs if s.start < lcp]
    new = covered - lcp
    reply = min(math.ceil(prev.out_tokens / block_size), new) if prev.out_tokens > 0 else 0
    if reply:
        kept.append(Segment(ASSISTANT, lcp, lcp + reply))
    tail = r.in_tokens - covered * block_size
    if new - reply > 0 or tail > 0:
        kept.append(Segment(USER, lcp + reply, covered))
    return kept


def structure(requests: Sequence[TraceRequest], index: int, block_size: int,
              prefix_tokens: int, start: tuple[int, list[Segment]] | None = None
              ) -> list[Segment]:
    """Messages of `requests[index]`, walking the stream from turn 0 (or from `start`, the
    known messages of an earlier turn)."""
    k, segs = start if start is not None and start[0] <= index else (
        0, first_turn(requests[0], block_size, prefix_tokens))
    while k < index:
        segs = next_turn(segs, requests[k], requests[k + 1], block_size)
        k += 1
    return segs


def first_user(segs: Sequence[Segment]) -> int:
    """Index of the first user message (where the cache-bust marker goes), or -1."""
    return next((i for i, s in enumerate(segs) if s.role == USER), -1)


class TemplateOverhead:
    """Prompt tokens the chat template adds to a message list, by its roles.

    Templates add a fixed run of tokens per message (and some a default system message when
    the first is not one), so the count is the first message's cost plus each later role's;
    that model is checked against the template on mixed role sequences once, and if it ever
    disagrees every role sequence is counted with the template itself."""

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
        self._exact: dict[tuple[str, ...], int] = {}
        roles = (SYSTEM, USER, ASSISTANT)
        self.first = {r: self._template((r,)) for r in roles}
        base = self.first[SYSTEM]
        self.later = {r: self._template((SYSTEM, r)) - base for r in roles}
        probes = [(SYSTEM, USER, ASSISTANT, USER, ASSISTANT, USER), (USER, ASSISTANT, USER),
                  (SYSTEM, USER, USER, ASSISTANT, ASSISTANT, USER), (ASSISTANT, USER)]
        self.additive = all(self._model(p) == self._template(p) for p in probes)

    def _template(self, roles: tuple[str, ...]) -> int:
        ids = self.tok.apply_chat_template([{"role": r, "content": ""} for r in roles],
                                           tokenize=True, add_generation_prompt=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return len(ids)

    def _model(self, roles: Sequence[str]) -> int:
        return self.first[roles[0]] + sum(self.later[r] for r in roles[1:])

    def __call__(self, roles: Sequence[str]) -> int:
        if not roles:
            return 0
        if self.additive:
            return self._model(roles)
        key = tuple(roles)
        n = self._exact.get(key)
        if n is None:
            n = self._exact[key] = self._template(key)
        return n


def json_string_bytes(text: str) -> bytes:
    """`text` as the inside of a JSON string (escaped, no quotes)."""
    return orjson.dumps(text)[1:-1]


def body_head(base: dict[str, Any]) -> bytes:
    """The request fields before the prompt: `{...,` (or `{` for none)."""
    if not base:
        return b"{"
    return orjson.dumps(base)[:-1] + b","


# (start, end) -> the request's blocks there: bytes, or word indices the body gathers
BlocksOf = Callable[[int, int], list[Any]]


def chat_chunks(head: bytes, segs: Sequence[Segment], blocks_of: BlocksOf, marker: bytes,
                tail: Any, max_tokens: int, field: bytes = b"max_tokens") -> list[Any]:
    """The pieces of a chat request body, in order (bytes, or what blocks_of gives); the
    output cap under `field` (AIPerf's chat endpoint: max_completion_tokens)."""
    out = [head, b'"messages":[']
    at = first_user(segs) if marker else -1
    last = len(segs) - 1
    for i, s in enumerate(segs):
        out.append(b'{"role":"%s","content":"' % s.role.encode() if i == 0
                   else b'"},{"role":"%s","content":"' % s.role.encode())
        if i == at:
            out.append(marker)
        out.extend(blocks_of(s.start, s.end))
        if i == last and len(tail):
            out.append(tail)
    out.append(b'"}],"%s":%d}' % (field, max_tokens) if segs
               else b'],"%s":%d}' % (field, max_tokens))
    return out


def completion_chunks(head: bytes, segs: Sequence[Segment], blocks_of: BlocksOf,
                      marker: bytes, tail: Any, max_tokens: int) -> list[Any]:
    """A completions body: the same blocks in one prompt, the marker where the first user
    message would start."""
    out = [head, b'"prompt":"']
    at = first_user(segs) if marker else -1
    for i, s in enumerate(segs):
        if i == at:
            out.append(marker)
        out.extend(blocks_of(s.start, s.end))
    if len(tail):
        out.append(tail)
    out.append(b'","max_tokens":%d}' % max_tokens)
    return out
