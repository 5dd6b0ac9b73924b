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
seeded generators. Generated blocks are kept in a cache bounded in bytes: a turn's body is
built from its history's blocks (mostly cache hits) plus its new ones; nothing holds a lane's
history as text.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.workloads.prompts import stable_vocabulary

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
DEFAULT_CACHE_BYTES = 256 << 20


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
    """The stable vocabulary as token ids, their bytes, and a fixed-width array to gather."""

    def __init__(self, tokenizer: Any, vocab: np.ndarray | None = None) -> None:
        self.ids = stable_vocabulary(tokenizer) if vocab is None else vocab
        self.words = [tokenizer.decode([int(i)]).encode() for i in self.ids]
        width = max(len(w) for w in self.words)
        self._fixed = np.array(self.words, dtype=f"S{width}")
        self.lengths = np.array([len(w) for w in self.words], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.words)

    def picks(self, key: int, hash_ids: Sequence[int], size: int) -> np.ndarray:
        """(len(hash_ids), size) word indices: block j of `hash_ids` under scope `key`."""
        h = np.asarray(hash_ids, dtype=np.uint64).reshape(-1, 1)
        pos = np.arange(size, dtype=np.uint64).reshape(1, -1)
        with np.errstate(over="ignore"):
            x = _mix(np.uint64(key) ^ (h * _GOLDEN)) + pos * _GOLDEN
            x = _mix(x)
        return (x % np.uint64(len(self.words))).astype(np.int64)

    def join(self, picks: np.ndarray) -> list[bytes]:
        """Each row of word indices as one bytes string: one fixed-width gather for all rows,
        the padding dropped in one C pass, then cut at the rows' byte lengths."""
        if picks.size == 0:
            return [b""] * picks.shape[0]
        flat = self._fixed[picks].tobytes().replace(b"\x00", b"")
        ends = np.cumsum(self.lengths[picks].sum(axis=1)).tolist()
        starts = [0, *ends[:-1]]
        return [flat[a:b] for a, b in zip(starts, ends, strict=True)]

    def token_ids(self, picks: np.ndarray) -> np.ndarray:
        return self.ids[picks]


class BlockSource:
    """Block bytes by (scope key, hash id), generated on demand, cached within a byte budget."""

    def __init__(self, table: TokenTable, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.table = table
        self._cache: OrderedDict[tuple[int, int, int], bytes] = OrderedDict()
        self._budget = cache_bytes
        self._held = 0
        self.generated = 0  # blocks built (cache misses), for benchmarks

    def blocks(self, key: int, hash_ids: Sequence[int], size: int) -> list[bytes]:
        """The bytes of each block, in order; misses generated in one vectorised batch."""
        cache = self._cache
        out: list[bytes | None] = []
        for h in hash_ids:
            k = (key, h, size)
            b = cache.get(k)
            if b is not None:
                cache.move_to_end(k)  # least recently used goes first
            out.append(b)
        missing = [i for i, b in enumerate(out) if b is None]
        if missing:
            ids = list(dict.fromkeys(hash_ids[i] for i in missing))  # each id built once
            made = dict(zip(ids, self.table.join(self.table.picks(key, ids, size)),
                            strict=True))
            self.generated += len(made)
            for i in missing:
                out[i] = made[hash_ids[i]]
            for h, b in made.items():
                self._put((key, h, size), b)
        return out  # type: ignore[return-value]

    def _put(self, k: tuple[int, int, int], b: bytes) -> None:
        if self._budget <= 0:
            return
        self._cache[k] = b
        self._held += len(b)
        while self._held > self._budget and self._cache:
            _, old = self._cache.popitem(last=False)
            self._held -= len(old)

    def tail(self, key: int, label: object, n: int) -> bytes:
        """n tokens of their own (a partial block, or blocks a trace did not list): keyed by
        `label`, never shared with a hash block."""
        if n <= 0:
            return b""
        picks = self.table.picks(key ^ scope_key("tail", label), [0], n)
        return self.table.join(picks)[0]

    def tail_ids(self, key: int, label: object, n: int) -> np.ndarray:
        picks = self.table.picks(key ^ scope_key("tail", label), [0], max(n, 0))
        return self.table.token_ids(picks[0])

    def block_ids(self, key: int, hash_id: int, size: int) -> np.ndarray:
        return self.table.token_ids(self.table.picks(key, [hash_id], size)[0])
