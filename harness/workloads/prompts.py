"""Prompts from block hash ids: exact prefix sharing, exact token counts.

Each hash id maps to one deterministic block of `block_size` token ids: the same id always
gives the same tokens, different ids different tokens, so the server's prefix cache sees
exactly the trace's sharing. A per-session salt (the cache-bust marker) changes every block of
a session tree, so recycled or concurrent copies of one trace never hit each other's cache.

Blocks are drawn from a "stable vocabulary": single-token words with a leading space whose
text re-encodes to exactly themselves, so any sequence of them decodes to text that the
server tokenizes back to the same ids (no merges across block boundaries). That keeps text
APIs exact; `check_stability` verifies it for the tokenizer at hand before a run starts.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

_WORD = re.compile(r"^ [a-z]{2,12}$")


class UnstableTokenizer(RuntimeError):
    pass


def stable_vocabulary(tokenizer: Any) -> np.ndarray:
    ids = []
    for token_id in tokenizer.get_vocab().values():
        text = tokenizer.decode([token_id])
        if _WORD.match(text) and tokenizer.encode(text, add_special_tokens=False) == [token_id]:
            ids.append(token_id)
    if len(ids) < 1000:
        raise UnstableTokenizer(
            f"only {len(ids)} single-token words found: this tokenizer cannot build exact "
            "prompts from hash ids"
        )
    return np.array(sorted(ids), dtype=np.int64)


class BlockPrompts:
    """Hash ids -> prompt text of an exact token count, blocks cached per (salt, id)."""

    def __init__(self, tokenizer: Any, seed: int, cache_blocks: int = 200_000) -> None:
        self.tokenizer = tokenizer
        self.vocab = stable_vocabulary(tokenizer)
        self.seed = seed
        self._cache: OrderedDict[tuple[object, object, int], str] = OrderedDict()
        self._cache_blocks = cache_blocks

    def block_ids(self, salt: object, hash_id: object, size: int) -> np.ndarray:
        digest = hashlib.blake2b(repr((self.seed, salt, hash_id)).encode(), digest_size=8)
        rng = np.random.default_rng(int.from_bytes(digest.digest(), "little"))
        return rng.choice(self.vocab, size=size)

    def _block_text(self, salt: object, hash_id: object, size: int) -> str:
        key = (salt, hash_id, size)
        text = self._cache.get(key)
        if text is None:
            text = self.tokenizer.decode(self.block_ids(salt, hash_id, size).tolist())
            self._cache[key] = text
            if len(self._cache) > self._cache_blocks:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return text

    def prompt(self, salt: object, hash_ids: Sequence[object], block_size: int,
               in_tokens: int, pad_key: object) -> str:
        """Text of exactly `in_tokens` tokens: whole blocks, the last one cut to fit; blocks of
        the request's own (`pad_key`) when the trace lists fewer blocks than tokens."""
        full, rest = divmod(in_tokens, block_size)
        ids = list(hash_ids[:full])
        pad = [(pad_key, j) for j in range(full - len(ids))]
        parts = [self._block_text(salt, h, block_size) for h in ids + pad]
        if rest:
            tail_id = hash_ids[full] if full < len(hash_ids) else (pad_key, "tail")
            tail = self.block_ids(salt, tail_id, block_size)[:rest]
            parts.append(self.tokenizer.decode(tail.tolist()))
        return "".join(parts)

    def check_stability(self, samples: int = 20, length: int = 300) -> None:
        """Raise if concatenated blocks do not re-tokenize to the same ids."""
        rng = np.random.default_rng(self.seed)
        for _ in range(samples):
            ids = rng.choice(self.vocab, size=length).tolist()
            if self.tokenizer.encode(self.tokenizer.decode(ids), add_special_tokens=False) != ids:
                raise UnstableTokenizer(
                    "random blocks of single-token words do not re-tokenize to themselves with "
                    "this tokenizer; prompts from hash ids would not be exact"
                )
