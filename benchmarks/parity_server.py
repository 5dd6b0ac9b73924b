"""The scripted server, with each write of k tokens sent as k one-token SSE events.

harness.testing.scripted_server writes a k-token chunk as one event carrying k tokens of text.
An engine that decodes several tokens per step (speculative decoding, or a server that batches
its flushes) instead sends several events in one socket write; tools that time events rather
than writes see that shape differently. With `--tokens-per-chunk 48` this sends 48 events per
write, each one token, and the write log (GET /x/log) still records one write time per write.

Run: python -m benchmarks.parity_server --port 0 --ttft-ms 50 --itl-ms 20 --tokens-per-chunk 48
"""

from __future__ import annotations

from harness.testing import scripted_server

_one_chunk = scripted_server._chunk_event


def _split_events(chat: bool, text: str, model: str) -> bytes:
    # The server builds a k-token chunk's text as " tok" * k; one event per " tok".
    return b"".join(_one_chunk(chat, " tok", model) for _ in range(max(1, text.count(" tok"))))


if __name__ == "__main__":
    scripted_server._chunk_event = _split_events  # the only change: how a write is framed
    scripted_server.main()
