"""The fast SSE path agrees with a full parse, whatever the read boundaries."""

from __future__ import annotations

import random

import orjson
import pytest

from harness.client.read_state import PyFeedState
from harness.client.sse import StreamAccumulator
from harness.records import RequestRecord


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


def _one_event_per_read(stream: bytes, strict: bool = False) -> RequestRecord:
    acc = StreamAccumulator(strict=strict)
    for t, ev in enumerate(stream.split(b"\n\n")[:-1]):
        acc.feed(ev + b"\n\n", float(t))
    rec = RequestRecord("r", "measured", 7, 10, http_status=200)
    acc.finish(rec, 1e6)
    return rec


def test_head_and_tail_are_parsed_only_as_far_as_they_must_be(monkeypatch) -> None:
    """One read holding a whole 2000-event reply: the head stops at the first content event,
    the tail walks back to the last one; nothing in between is parsed."""
    import harness.client.sse as sse

    calls = []
    real = sse.parse_event
    monkeypatch.setattr(sse, "parse_event", lambda raw: calls.append(raw) or real(raw))
    rec = _feed(_chat_stream(2000), strict=False, seed=0, big=True)
    assert rec.ok and len(rec.chunk_ts) == 2000
    assert len(calls) <= 8, len(calls)  # role, first content; last content, finish, usage, DONE


def test_keepalive_comment_between_reads_is_not_a_chunk() -> None:
    stream = _chat_stream(50)
    cut = stream.index(_ev({"choices": [{"delta": {"content": "t20"}, "finish_reason": None}]}))
    rec = _one_event_per_read(stream[:cut] + b": keep-alive\n\n" + stream[cut:])
    assert rec.ok and len(rec.chunk_ts) == 50


@pytest.mark.parametrize("seed", range(40))
def test_mangled_streams_never_raise_and_every_failure_says_why(seed: int) -> None:
    """Bytes flipped, dropped and duplicated anywhere, read boundaries anywhere: each record
    is valid or failed with a reason, in both paths."""
    rng = random.Random(seed)
    data = bytearray(_chat_stream(rng.choice([3, 40, 300])))
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(data))
        op = rng.choice(["flip", "drop", "dup", "junk"])
        if op == "flip":
            data[i] = rng.randrange(256)
        elif op == "drop":
            del data[i:i + rng.randint(1, 40)]
        elif op == "dup":
            data[i:i] = data[i:i + rng.randint(1, 400)]
        else:
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 30)))
    for strict in (False, True):
        rec = _feed(bytes(data), strict=strict, seed=seed, big=rng.random() < 0.5)
        assert rec.ok or rec.error, rec
        assert isinstance(rec.completion_tokens, int) and isinstance(rec.cached_tokens, int)


@pytest.mark.parametrize("seed", range(20))
def test_comments_anywhere_keep_the_fast_path_consistent(seed: int) -> None:
    """Keep-alive comments at random places, reads cut anywhere: a comment is no chunk where
    a read boundary shows it and at worst one chunk too many where it hides inside a read;
    the rest (errors, usage, the timestamps of the other chunks) is the strict path's."""
    rng = random.Random(seed)
    events = _chat_stream(rng.choice([30, 400])).split(b"\n\n")[:-1]
    k = rng.randint(1, 5)
    for _ in range(k):
        events.insert(rng.randint(2, len(events) - 3), b": ping")
    stream = b"\n\n".join(events) + b"\n\n"
    big = rng.random() < 0.5
    fast = _feed(stream, strict=False, seed=seed, big=big)
    strict = _feed(stream, strict=True, seed=seed, big=big)
    assert fast.ok and strict.ok, (fast.error, strict.error)
    assert len(strict.chunk_ts) <= len(fast.chunk_ts) <= len(strict.chunk_ts) + k
    assert set(strict.chunk_ts) <= set(fast.chunk_ts)
    assert fast.completion_tokens == strict.completion_tokens
    # One event per read (how engines write): every comment is seen, the paths are identical.
    fast, strict = _one_event_per_read(stream), _one_event_per_read(stream, strict=True)
    assert fast.ok and list(fast.chunk_ts) == list(strict.chunk_ts)


@pytest.mark.parametrize("seed", range(10))
def test_malformed_events_one_per_read_fail_identically(seed: int) -> None:
    rng = random.Random(seed)
    events = _chat_stream(400).split(b"\n\n")[:-1]
    at = sorted(rng.sample(range(2, len(events) - 3), 3))
    for i in reversed(at):
        events.insert(i, rng.choice([b"data: {oops", b"data: ", b'data: "str"', b"data: garbage"]))
    stream = b"\n\n".join(events) + b"\n\n"
    fast, strict = _one_event_per_read(stream), _one_event_per_read(stream, strict=True)
    assert fast.error == strict.error
    assert fast.error.startswith(f"malformed SSE event at chunk {at[0]}: ")
    assert list(fast.chunk_ts) == list(strict.chunk_ts) and len(fast.chunk_ts) == 400


@pytest.mark.parametrize("seed", range(10))
def test_a_malformed_event_inside_a_read_of_many_is_noticed(seed: int) -> None:
    """A client that fell behind reads many events at once; a bad one in the middle of such a
    read fails the request exactly as the strict parse does."""
    rng = random.Random(seed)
    events = _chat_stream(400).split(b"\n\n")[:-1]
    at = rng.randrange(50, len(events) - 50)
    events.insert(at, rng.choice([b"data: {oops", b"data: garbage", b'data: {"a": 1']))
    stream = b"\n\n".join(events) + b"\n\n"
    fast, strict = _feed(stream, False, seed, big=True), _feed(stream, True, seed, big=True)
    assert fast.error == strict.error, (fast.error, strict.error)
    assert fast.error.startswith("malformed SSE event at chunk ")


@pytest.mark.parametrize("seed", range(6))
def test_one_event_read_shortcut_leaves_the_state_the_general_path_leaves(seed: int) -> None:
    """feed's branch for a read of exactly one `data...}` event (the usual read at one event
    per write) must leave every field as the general path would: fed the same reads, one
    accumulator takes it where it can, the other never (its _steady cleared before each read).
    Comments, malformed events, reads of two events and split events are mixed in."""
    rng = random.Random(seed)
    events = _chat_stream(300).split(b"\n\n")[:-1]
    for _ in range(6):
        events.insert(rng.randint(2, len(events) - 3),
                      rng.choice([b": ping", b"data: {oops", b'data: {"a": 1}', b"data: x}"]))
    reads = []
    for ev in events:
        r = rng.random()
        if r < 0.1 and reads:  # two events in one read
            reads[-1] += ev + b"\n\n"
        elif r < 0.2:  # one event split across two reads
            cut = rng.randint(1, len(ev) + 1)
            reads += [ev[:cut], ev[cut:] + b"\n\n"]
        else:
            reads.append(ev + b"\n\n")
    short, general = StreamAccumulator(), StreamAccumulator()
    took = 0
    for t, buf in enumerate(reads):
        took += (short._steady and buf[:1] == b"d" and buf.endswith(b"}\n\n")
                 and buf.count(b"\n\n") == 1)
        short.feed(buf, float(t))
        general._steady = False
        general.feed(buf, float(t))
    assert took > 200  # the shortcut was taken, and most reads went through it
    # The accumulator's own slots and those of its base (read_ts, _pend, ...: read_state.py)
    for name in (*StreamAccumulator.__slots__, *PyFeedState.__slots__):
        if name != "_steady":
            assert getattr(short, name) == getattr(general, name), name
    a, b = RequestRecord("r", "measured", 7, 10), RequestRecord("r", "measured", 7, 10)
    short.finish(a, 1e6)
    general.finish(b, 1e6)
    assert (a.error, a.truncated, a.completion_tokens) == (b.error, b.truncated,
                                                           b.completion_tokens)
    assert list(a.chunk_ts) == list(b.chunk_ts)


@pytest.mark.parametrize("seed", range(6))
def test_event_times_of_a_range_are_the_whole_streams_sliced(seed: int) -> None:
    """`_event_times(lo, hi)` takes one of three ways (a slice where every read before the range's
    end completed one event, list slices for a few reads of other counts, numpy's repeat for
    many); each must give what repeating every read's stamp by its event count and slicing gives,
    wherever the reads of other counts fall."""
    rng = random.Random(seed)
    acc = StreamAccumulator()
    counts = [rng.choice([1] * 8 + [0, 2, 3]) for _ in range(rng.randint(1, 60))]
    if seed == 4:  # more reads of other counts than the list path takes (numpy's repeat)
        counts = [rng.choice([0, 2, 3, 48]) for _ in range(100)]
    elif seed % 2:  # one event a read until the last read (usage and [DONE] together)
        counts = [1] * len(counts) + [2]
    acc.read_ts = [float(i) for i in range(len(counts))]
    acc._counts = [(i, c) for i, c in enumerate(counts) if c != 1]
    acc._extra = sum(c - 1 for c in counts)
    whole = [float(i) for i, c in enumerate(counts) for _ in range(c)]
    assert acc.n_events == len(whole)
    for lo in range(len(whole) + 1):
        for hi in (lo, min(lo + 1, len(whole)), rng.randint(lo, len(whole)), len(whole)):
            assert acc._event_times(lo, hi).tolist() == whole[lo:hi], (lo, hi)
    assert acc._event_times().tolist() == whole
