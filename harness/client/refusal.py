"""Why a reply cannot be read as a stream, worded once for both transports
(`client.transport`: aiohttp in harness.client.streaming, httptools in harness.client.h1_stream)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ERROR_BODY_BYTES = 65536  # of a non-200 reply's body, read for its message
REDIRECTS = frozenset({301, 302, 303, 307, 308})


def _media(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def needs_body(status: int, content_type: str | None) -> bool:
    """Whether `refusal` quotes the reply's body: a non-200 that is no redirect, or a 200 that
    is not an event stream."""
    if status == 200:
        media = _media(content_type)
        return bool(media) and media != "text/event-stream"
    return status not in REDIRECTS


def refusal(status: int, location: str | None, encoding: str | None,
            content_type: str | None, body: bytes, scrub: Callable[[str], str]) -> str:
    """"" when a reply can be streamed; else the request's error. `body` is read only where
    `needs_body` says; `scrub` takes the API key out of text a server echoes."""
    if status in REDIRECTS:
        where = location or "(no Location header)"
        return scrub(
            f"HTTP {status}: redirected to {where}; set engine.url to the final URL "
            "(redirects are not followed, so the API key never leaves the configured origin)")
    if status != 200:
        text = scrub(body.decode(errors="replace")).strip()
        return f"HTTP {status}: {text[:500] or '(empty body)'}"
    media = _media(content_type)
    if media and media != "text/event-stream":
        # a login page, a proxy's notice, one JSON body from a server that ignored
        # "stream": none of them is a stream, and "ended without [DONE]" would hide why
        text = " ".join(scrub(body.decode(errors="replace")).split())
        return (f"HTTP 200 with Content-Type {content_type}, expected "
                f"text/event-stream (the SSE stream \"stream\": true asks for); body: "
                f"{text[:300] or '(empty)'} - check that engine.url is the server's "
                "OpenAI-compatible API and that it streams")
    enc = (encoding or "identity").strip().lower()
    if enc not in ("", "identity"):
        return (f"server sent Content-Encoding {enc}; the client asked for identity "
                "and reads the stream as it arrives, undecoded: turn compression off on "
                "the server or proxy")
    return ""


async def read_some(content: Any, limit: int) -> bytes:
    """Up to `limit` bytes of a body: an error reply may be endless."""
    out = bytearray()
    while len(out) < limit:
        chunk = await content.read(limit - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)
