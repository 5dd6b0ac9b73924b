"""Block bytes from hash ids, cheaply and deterministically (AgentX prompt synthesis, docs/
upstream/agentx.md §4).

A block is `size` tokens of a "stable vocabulary" (harness.workloads.prompts): single-token
words " abc" that re-encode to themselves, so any run of them tokenizes to exactly its words on
the server and needs no JSON escaping. The table holds each word's UTF-8 bytes once; a block
is the words its key picks, joined. The key is (scope, hash id): the same id in the same scope
is the same bytes in every session, lane and sub-agent, as AIPerf seeds each block from
`sha256(f"{seed}:{trace_id}:{hash_id}")` (ai-dynamo/aiperf:src/aiperf/common/
hash_id_random_generator.py, `reseed_for_hash_id`).

Word picks are a counter-based hash (splitmix64 of scope key, id and position), vectorised
over every block a request needs, so generating N new blocks is a few numpy passes, not N
seeded generators. A stream keeps its history as word indices (2 bytes a token, a quarter of
the text, harness.workloads.agentic_bodies): a turn generates only its new blocks, and its
body is one gather of the history's indices from the table, at memory speed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.workloads.prompts import stable_vocabulary

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def scope_key(*parts: object) -> int:
    """A 64-bit key for a block scope (seed, point, trace...), stable across processes."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class TokenTable:
    """The stable vocabulary as token ids, their bytes, and a fixed-width array to gather.

    Words of one byte length are kept when there are enough of them (the commonest length:
    SmolLM2 has 3,018 eight-byte words): a block is then a plain gather of fixed-width rows,
    its bytes the array's memory as it is, 64 tokens x 8 bytes per block."""

    def __init__(self, tokenizer: Any, vocab: np.ndarray | None = None,
                 min_words: int = 1000) -> None:
        ids = stable_vocabulary(tokenizer) if vocab is None else vocab
        words = [tokenizer.decode([int(i)]).encode() for i in ids]
        by_len = Counter(len(w) for w in words)
        width, count = by_len.most_common(1)[0]
        self.uniform = count >= min_words
        if self.uniform:
            keep = [i for i, w in enumerate(words) if len(w) == width]
            ids, words = ids[keep], [words[i] for i in keep]
        self.ids, self.words = ids, words
        width = max(len(w) for w in words)
        self._fixed = np.array(words, dtype=f"S{width}")
        self.width = width
        self.lengths = np.array([len(w) for w in words], dtype=np.int64)
        self.index_dtype = np.uint16 if len(words) <= 1 << 16 else np.uint32

    def text(self, picks: np.ndarray) -> bytes:
        """The bytes of a run of word indices (any shape, read in order)."""
        if picks.size == 0:
            return b""
        flat = self._fixed[picks].tobytes()
        return flat if self.uniform else flat.replace(b"\x00", b"")

    def assemble(self, parts: list[bytes | np.ndarray]) -> bytes | bytearray:
        """One body from bytes and runs of word indices, in order. With fixed-width words the
        words are gathered straight into the body (one pass over it, no joined copies)."""
        if not self.uniform:
            return b"".join(p if isinstance(p, bytes) else self.text(p) for p in parts)
        w = self.width
        total = sum(len(p) if isinstance(p, bytes) else p.size * w for p in parts)
        body = bytearray(total)
        at = 0
        for p in parts:
            if isinstance(p, bytes):
                body[at:at + len(p)] = p
                at += len(p)
            elif p.size:
                out = np.frombuffer(body, dtype=self._fixed.dtype, count=p.size, offset=at)
                np.take(self._fixed, p, out=out, mode="clip")  # clip: unbuffered, ids valid
                at += p.size * w
        return body

    def tail(self, key: int, label: object, n: int) -> np.ndarray:
        """n word indices of their own (a partial block, or blocks a trace did not list):
        keyed by `label`, never equal to a hash block's."""
        return self.picks(key ^ scope_key("tail", label), [0], max(n, 0))[0]

    def __len__(self) -> int:
        return len(self.words)

    def picks(self, key: int, hash_ids: Sequence[int], size: int) -> np.ndarray:
        """(len(hash_ids), size) word indices: block j of `hash_ids` under scope `key`."""
        h = np.asarray(hash_ids, dtype=np.uint64).reshape(-1, 1)
        pos = np.arange(size, dtype=np.uint64).reshape(1, -1)
        with np.errstate(over="ignore"):
            x = _mix(np.uint64(key) ^ (h * _GOLDEN)) + pos * _GOLDEN
            x = _mix(x)
        return (x % np.uint64(len(self.words))).astype(self.index_dtype)

    def join(self, picks: np.ndarray) -> list[bytes]:
        """Each row of word indices as one bytes string."""
        if picks.size == 0:
            return [b""] * picks.shape[0]
        if self.uniform:  # fixed-width rows: the gathered array's bytes are the text
            flat = self._fixed[picks].tobytes()
            row = picks.shape[1] * self.width
            return [flat[a:a + row] for a in range(0, len(flat), row)]
        # mixed widths: one gather, the padding dropped in one C pass, cut at row lengths
        flat = self._fixed[picks].tobytes().replace(b"\x00", b"")
        ends = np.cumsum(self.lengths[picks].sum(axis=1)).tolist()
        starts = [0, *ends[:-1]]
        return [flat[a:b] for a, b in zip(starts, ends, strict=True)]

    def token_ids(self, picks: np.ndarray) -> np.ndarray:
        return self.ids[picks]
