"""Shared fixtures: the scripted server as a real process on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.testing.spawn import spawn_server


@pytest.fixture(scope="session")
def scripted_server() -> Iterator[str]:
    """Scripted server, TTFT 40 ms, ITL 4 ms, chunks of 1-3 tokens (like speculative decoding)."""
    with spawn_server(
        "harness.testing.scripted_server", "--ttft-ms", "40", "--itl-ms", "4",
        "--tokens-per-chunk", "1", "3", "2",
    ) as port:
        yield f"http://127.0.0.1:{port}"
