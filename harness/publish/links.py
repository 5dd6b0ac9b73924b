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


def readable_point_name(p: Any) -> str:
    """A point's id with its speculator's own name and k after the load (`c1-ngram-k4-r0-<hash>`),
    for file names a person tells apart: a plain and a speculative point at one load differ by
    more than a hash. A plain point keeps its id. `p` is a flat point or a PointRecord (both
    answer `.get`)."""
    from harness.record.spec_names import spec_name

    pid = str(p.get("point_id"))
    name = spec_name(p)
    if name == "none":
        return pid
    tag = f"{name}-k{p.get('spec_k')}"
    load, sep, rest = pid.partition("-")
    return f"{load}-{tag}-{rest}" if sep else f"{pid}-{tag}"
