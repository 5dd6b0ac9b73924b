"""Typed records that cross module boundaries: what to send, and what happened to it.

A `RequestSpec` is built by a workload (fixed-sequence or trace replay) and consumed by the
client. A `RequestRecord` is what the client measured; metrics are pure functions of lists of
them. Times are seconds on the client's monotonic clock (`time.perf_counter`, which on Linux is
CLOCK_MONOTONIC and therefore comparable across processes on one host).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PHASE_WARMUP = "warmup"
PHASE_MEASURED = "measured"
PHASE_PROBE = "probe"  # one-token requests used to prime a server (agentic warmup)


@dataclass(slots=True)
class RequestSpec:
    """One request to send. `body` is the encoded JSON payload, built before timing starts."""

    request_id: str
    path: str  # "/v1/completions" or "/v1/chat/completions"
    body: bytes
    expected_prompt_tokens: int
    max_tokens: int
    phase: str = PHASE_MEASURED
    # Workload-specific identity (session, turn, lane...) copied onto the record unchanged.
    tags: dict[str, Any] = field(default_factory=dict)
    keep_raw: bool = False  # keep every (arrival time, bytes) read; for instrument checks only
    # Request headers of this request alone (an agentic session's X-Correlation-ID...), sent
    # over the client's own; None: the client's only.
    headers: dict[str, str] | None = None


@dataclass(slots=True, repr=False)
class RequestRecord:
    """Everything the client saw of one request. Failed and truncated requests are kept."""

    request_id: str
    phase: str
    expected_prompt_tokens: int
    max_tokens: int
    issue_ts: float = float("nan")  # the client started issuing the request
    send_ts: float = float("nan")  # the request body was written to the socket
    # Client queueing: issue -> body on the socket, less any connection set-up (network, not
    # the client); NaN when the body never went out.
    queue_delay_s: float = float("nan")
    first_token_ts: float = float("nan")  # first chunk carrying content/reasoning/tool call
    last_token_ts: float = float("nan")  # last chunk carrying content/reasoning/tool call
    end_ts: float = float("nan")  # stream closed
    # Arrival of every content chunk (a float array or list).
    chunk_ts: Sequence[float] = field(default_factory=list)
    # Tokens per content chunk, when the server said (vLLM `token_ids`); empty otherwise: a
    # chunk may then hold several tokens, and only usage.completion_tokens counts them.
    chunk_tokens: list[int] = field(default_factory=list)
    chunk_tokens_exact: bool = False
    prompt_tokens: int = -1  # from the server's usage; -1 when the server sent none
    completion_tokens: int = -1
    cached_tokens: int = -1
    # Draft tokens the server proposed and accepted for this request, where its reply says
    # (llama.cpp's `timings.draft_n` / `draft_n_accepted`); -1 when it does not.
    spec_draft_tokens: int = -1
    spec_accepted_tokens: int = -1
    http_status: int = 0
    error: str = ""
    finish_reason: str = ""
    truncated: bool = False  # the stream ended without its terminator
    retries: int = 0  # resends after a stale pooled connection (nothing reached the server)
    tags: dict[str, Any] = field(default_factory=dict)
    raw_reads: list[tuple[float, bytes]] | None = None  # only when the spec asked (keep_raw)

    @property
    def ok(self) -> bool:
        return self.http_status == 200 and not self.error and not self.truncated

    def __repr__(self) -> str:
        """Cheap and bounded: a phase holds ~100k records, and a repr of a container of them
        (a task result, an exception's argument) must not format every chunk stamp."""
        return (f"RequestRecord({self.request_id!r}, {self.phase}, status={self.http_status}, "
                f"chunks={len(self.chunk_ts)}, error={self.error[:80]!r})")

    @property
    def prompt_mismatch(self) -> bool:
        """The server counted a different prompt length than the workload built."""
        return self.prompt_tokens >= 0 and self.prompt_tokens != self.expected_prompt_tokens
