"""Where the SSE accounting spends its time on 256-chunk bodies.

Feeds `StreamAccumulator` a vLLM-shaped stream of 256 content chunks plus finish, usage and
[DONE], in three read patterns: one event per read (a client keeping up), 16 events per read,
and the whole body in one read (a client far behind). Prints microseconds per stream and per
chunk, and under cProfile the share of the time spent in the head scan (`_feed_head`) and the
tail scan (`_finish_fast`).

Run: python benchmarks/sse_profile.py [--streams 2000]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from harness.client.sse import StreamAccumulator
from harness.records import RequestRecord

_CHUNK = (b'data: {"id":"cmpl-1","object":"text_completion","created":0,"model":"m",'
          b'"choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}]}\n\n')
_END = (b'data: {"id":"cmpl-1","object":"text_completion","created":0,"model":"m","choices":'
        b'[{"index":0,"text":"","finish_reason":"length"}]}\n\n'
        b'data: {"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":256,'
        b'"total_tokens":266}}\n\ndata: [DONE]\n\n')


def reads(events_per_read: int) -> list[bytes]:
    events = [_CHUNK] * 256 + [_END]
    return [b"".join(events[i:i + events_per_read])
            for i in range(0, len(events), events_per_read)]


def one_pass(pattern: list[bytes], streams: int) -> float:
    t0 = time.perf_counter()
    for _ in range(streams):
        acc = StreamAccumulator()
        for i, buf in enumerate(pattern):
            acc.feed(buf, float(i))
        rec = RequestRecord("r", "measured", 10, 256)
        acc.finish(rec, 1.0)
        assert len(rec.chunk_ts) == 256 and not rec.error, rec.error
    return time.perf_counter() - t0


def shares(pattern: list[bytes], streams: int) -> dict[str, float]:
    prof = cProfile.Profile()
    prof.enable()
    one_pass(pattern, streams)
    prof.disable()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # type: ignore[attr-defined]
    out = {}
    for name in ("_feed_head", "_finish_fast", "feed"):
        cum = sum(v[3] for k, v in st.stats.items() if k[2] == name)  # type: ignore[attr-defined]
        out[name] = cum / total if total else 0.0
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--streams", type=int, default=2000)
    a = p.parse_args()
    print(f"{'events/read':>11} {'us/stream':>10} {'ns/chunk':>9} {'head':>6} {'tail':>6} "
          f"{'feed':>6}  (shares of profiled time)")
    for k in (1, 16, 1000):
        pattern = reads(k)
        one_pass(pattern, 50)  # warm
        s = one_pass(pattern, a.streams) / a.streams
        sh = shares(pattern, max(a.streams // 4, 50))
        print(f"{k:>11} {s * 1e6:>10.1f} {s / 256 * 1e9:>9.0f} {sh['_feed_head']:>6.1%} "
              f"{sh['_finish_fast']:>6.1%} {sh['feed']:>6.1%}")


if __name__ == "__main__":
    main()
