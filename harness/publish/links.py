"""Links drawn from data (an ingested row's run_url, a config, a trace): http(s) or nothing."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


def web_link(v: Any) -> str | None:
    """`v` when it is an absolute http(s) URL, else None: a link from data never carries
    `javascript:` (or any other scheme) into a page, where a click would run it."""
    if not isinstance(v, str) or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in v):
        return None
    try:
        u = urlsplit(v)
    except ValueError:
        return None
    return v if u.scheme.lower() in ("http", "https") and u.netloc else None
