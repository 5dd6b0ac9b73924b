"""The fast SSE path agrees with a full parse, whatever the read boundaries."""

from __future__ import annotations

import random

import orjson
import pytest

from harness.records import RequestRecord
from harness.sse import StreamAccumulator


def _ev(obj) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _chat_stream(n: int, usage: bool = True, done: bool = True, error_at: int = -1) -> bytes:
    out = [_ev({"choices": [{"delta": {"role": "assistant", "content": None}}]})]
    for i in range(n):
        if i == error_at:
            out.append(_ev({"error": {"message": "boom"}}))
            break
        out.append(_ev({"choices": [{"delta": {"content": f"t{i}"}, "finish_reason": None}]}))
    else:
        out.append(_ev({"choices": [{"delta": {}, "finish_reason": "length"}]}))
        if usage:
            out.append(_ev({"choices": [], "usage": {
                "prompt_tokens": 7, "completion_tokens": n,
                "prompt_tokens_details": {"cached_tokens": 3}}}))
    if done:
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def _feed(stream: bytes, strict: bool, seed: int, big: bool = False) -> RequestRecord:
    rng = random.Random(seed)
    acc = StreamAccumulator(strict=strict)
    pos, t = 0, 0.0
    while pos < len(stream):
        step = rng.randint(1, 9000 if big else 300)
        acc.feed(stream[pos:pos + step], t)
        pos += step
        t += 1.0
    rec = RequestRecord("r", "measured", 7, 10, http_status=200)
    acc.finish(rec, t)
    return rec


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("n", [1, 5, 400])
def test_fast_path_matches_strict_parse(seed: int, n: int) -> None:
    stream = _chat_stream(n)
    fast = _feed(stream, strict=False, seed=seed, big=n > 100)
    strict = _feed(stream, strict=True, seed=seed, big=n > 100)
    assert len(fast.chunk_ts) == n
    assert list(fast.chunk_ts) == list(strict.chunk_ts)
    assert (fast.first_token_ts, fast.last_token_ts) == (strict.first_token_ts,
                                                         strict.last_token_ts)
    assert fast.completion_tokens == n and fast.prompt_tokens == 7 and fast.cached_tokens == 3
    assert not fast.truncated and fast.ok and fast.finish_reason == "length"


def test_role_only_first_chunk_does_not_stamp_ttft() -> None:
    stream = _chat_stream(3)
    acc = StreamAccumulator()
    first_event_end = stream.index(b"\n\n") + 2
    acc.feed(stream[:first_event_end], 1.0)  # the role-only chunk arrives at t=1
    acc.feed(stream[first_event_end:], 2.0)
    rec = RequestRecord("r", "measured", 7, 3)
    acc.finish(rec, 3.0)
    assert rec.first_token_ts == 2.0


def test_missing_done_is_truncated_and_counted_as_failed() -> None:
    rec = _feed(_chat_stream(5, done=False), strict=False, seed=1)
    assert rec.truncated and not rec.ok and "[DONE]" in rec.error


def test_error_event_is_reported() -> None:
    rec = _feed(_chat_stream(20, error_at=10), strict=False, seed=2)
    assert rec.error == "boom" and not rec.ok
    assert len(rec.chunk_ts) == 10


def test_server_token_ids_make_chunk_counts_exact_in_strict_mode() -> None:
    evs = [_ev({"choices": [{"text": "ab", "token_ids": [1, 2]}]}),
           _ev({"choices": [{"text": "c", "token_ids": [3]}]}),
           _ev({"choices": [{"text": "", "finish_reason": "length"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 3}}),
           b"data: [DONE]\n\n"]
    acc = StreamAccumulator(strict=True)
    acc.feed(b"".join(evs), 1.0)
    rec = RequestRecord("r", "measured", 1, 3)
    acc.finish(rec, 2.0)
    assert rec.chunk_tokens == [2, 1] and rec.chunk_tokens_exact
