"""Ports in captured text as the recipe's placeholders: upstream's scripts bind fixed ports
(PORT, PORT+1, +2000, +10000, +12000); a recipe writes them {port} / {port+N} and the engine
adapter fills in whatever free port a sweep picks (harness/engines/template.py). Literal
braces are doubled so the text survives the same formatting."""

from __future__ import annotations

import re

PORT_SPAN = 20000  # {port+N}: N up to this (upstream: +1 engine, +2000, +10000, +12000)


def escape_braces(s: str) -> str:
    return s.replace("{", "{{").replace("}", "}}")


def port_sub(tok: str, port: int) -> str:
    """':N' (host:port, URLs) and a bare N after a port option as {port} / {port+K}."""
    def one(n: int) -> str | None:
        k = n - port
        return None if not 0 <= k <= PORT_SPAN else "{port}" if k == 0 else f"{{port+{k}}}"

    parts = re.split(r"(?<=:)(\d{2,5})(?!\d)", tok)
    out = []
    for i, p in enumerate(parts):
        if i % 2:  # a number after ':'
            out.append(one(int(p)) or p)
        else:
            out.append(escape_braces(p))
    return "".join(out)
