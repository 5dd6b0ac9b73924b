"""The engine emulator's state: its options, one request, one data-parallel rank."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

from harness.testing.emulator_cache import PrefixCache

ENGINES = ("sglang", "vllm", "trtllm", "atom")


@dataclass
class Options:
    engine: str = "vllm"
    dp: int = 1
    al: float = 2.5
    k: int = 3
    al_bias: float = 0.0
    seed: int = 0
    step_ms: float = 1.0
    ttft_ms: float = 2.0
    model: str = "emulated"
    decode_log_interval: int = 40
    sglang_verify_counter: bool = False
    tokenizer: str = ""  # a tokenizer.json: count prompt tokens as the real engine would
    kv_pool_tokens: int = 200_000  # per rank: what KV usage is a share of
    cache_blocks: int = 4096  # device prefix-cache capacity per rank, in text blocks
    host_blocks: int = 0  # host tier capacity per rank (0: no host tier)


@dataclass
class Req:
    prompt_tokens: int
    max_tokens: int
    text: str = ""
    cached_device: int = 0  # prompt tokens the rank's prefix cache served, by tier
    cached_host: int = 0
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    sent: int = 0
    steps: int = 0  # verify steps (drafts) of this request
    drafted_pos: list[int] = field(default_factory=list)  # TensorRT-LLM per-request stats
    accepted_pos: list[int] = field(default_factory=list)
    cancelled: bool = False
    routed_rank: int | None = None  # the dp rank a router pinned it to (None: round robin)

    @property
    def remaining(self) -> int:
        return self.max_tokens - self.sent


@dataclass
class Rank:
    idx: int
    rng: random.Random
    active: list[Req] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    c: dict[str, float] = field(default_factory=dict)  # this rank's counters
    per_pos: list[int] = field(default_factory=list)  # vLLM accepted per position
    forward_ct: int = 0
    interval_tokens: int = 0  # SGLang: accepted + 1 summed over the interval's requests
    interval_ct: int = 0  # SGLang: request verify steps in the interval
    gauge: float | None = None  # SGLang spec_accept_length once first logged
    gauge_rate: float = 0.0
    held_tokens: int = 0  # KV held by this rank's requests (prompt + generated so far)
    cache: PrefixCache = field(default_factory=lambda: PrefixCache(4096))
