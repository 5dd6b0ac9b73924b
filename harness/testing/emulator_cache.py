"""The engine emulator's prefix cache: per rank, a device tier (LRU over chained block hashes
of the prompt text) and an optional host tier that catches what the device evicts, so that
cache hits by source and KV usage move the way an engine's do under a replay with shared
prefixes. An instrument for tests, never a model of any engine's eviction policy."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field

BLOCK_CHARS = 256  # one block of prompt text (a prefix shorter than a block is never cached)


def block_hashes(text: str) -> list[bytes]:
    """Chained hashes of the text's whole blocks: block i's hash covers blocks 0..i."""
    out, h = [], hashlib.blake2b(digest_size=16)
    for i in range(len(text) // BLOCK_CHARS):
        h.update(text[i * BLOCK_CHARS:(i + 1) * BLOCK_CHARS].encode())
        out.append(h.copy().digest())
    return out


@dataclass
class Hit:
    device: int  # prompt tokens served from the device tier
    host: int  # prompt tokens served from the host tier

    @property
    def cached(self) -> int:
        return self.device + self.host


@dataclass
class PrefixCache:
    device_blocks: int
    host_blocks: int = 0
    device: OrderedDict[bytes, None] = field(default_factory=OrderedDict)
    host: OrderedDict[bytes, None] = field(default_factory=OrderedDict)

    def lookup(self, text: str, prompt_tokens: int) -> Hit:
        """The longest cached prefix (device blocks, then host blocks after them), in prompt
        tokens pro rata to its characters; then the whole prompt is cached on the device."""
        hashes = block_hashes(text)
        n_dev = 0
        while n_dev < len(hashes) and hashes[n_dev] in self.device:
            n_dev += 1
        n_host = n_dev
        while n_host < len(hashes) and hashes[n_host] in self.host:
            n_host += 1
        for h in hashes:
            self._put_device(h)
        per_char = prompt_tokens / max(len(text), 1)
        dev = int(n_dev * BLOCK_CHARS * per_char)
        return Hit(dev, int(n_host * BLOCK_CHARS * per_char) - dev)

    def _put_device(self, h: bytes) -> None:
        self.host.pop(h, None)
        self.device[h] = None
        self.device.move_to_end(h)
        while len(self.device) > self.device_blocks:
            old, _ = self.device.popitem(last=False)
            if self.host_blocks:
                self.host[old] = None
                while len(self.host) > self.host_blocks:
                    self.host.popitem(last=False)
