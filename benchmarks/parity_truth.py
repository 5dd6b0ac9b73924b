"""The server's truth for one parity cell: metrics from the scripted server's own write log.

`GET /x/log` on harness.testing.scripted_server returns, per request, the time it received the
request and the time it wrote each chunk, with the tokens in each (time.perf_counter, the clock
every process on this host shares). Nothing a client does can move these instants, so they are
what every tool's figures are judged against. The one instant the server cannot see is the
client's send; TTFT and E2EL here start at the server's receive, so a tool's TTFT error includes
its own send path and loopback (tens of microseconds on an idle host).
"""

from __future__ import annotations

import itertools
from typing import Any

METRICS = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "output_tput", "requests")


def truth_from_log(log: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Means over the requests the server streamed to the end.

    tpot_ms: per request (last write - first write) / (tokens - 1), then the mean over requests.
    itl_ms: the mean gap between consecutive tokens over all tokens of all requests (a write of
    k tokens delivers k-1 of them with no gap); itl_write_ms: the mean gap between writes.
    output_tput: tokens / (last write of any request - first receive of any request).
    """
    done = [t for t in log.values() if t.get("chunk_writes") and not t.get("truncated")]
    if not done:
        raise ValueError("the server log holds no completed stream")
    ttft, tpot, e2el, write_gaps = [], [], [], []
    span = 0.0
    gaps = 0
    tokens = 0
    for t in done:
        w = t["chunk_writes"]
        n = sum(t["chunk_tokens"])
        tokens += n
        ttft.append(w[0] - t["received"])
        e2el.append(w[-1] - t["received"])
        if n > 1:
            tpot.append((w[-1] - w[0]) / (n - 1))
            span += w[-1] - w[0]
            gaps += n - 1
        write_gaps.extend(b - a for a, b in itertools.pairwise(w))
    window = max(t["chunk_writes"][-1] for t in done) - min(t["received"] for t in done)
    return {
        "ttft_ms": 1e3 * sum(ttft) / len(ttft),
        "tpot_ms": 1e3 * sum(tpot) / len(tpot) if tpot else float("nan"),
        "itl_ms": 1e3 * span / gaps if gaps else float("nan"),
        "itl_write_ms": 1e3 * sum(write_gaps) / len(write_gaps) if write_gaps else float("nan"),
        "e2el_ms": 1e3 * sum(e2el) / len(e2el),
        "output_tput": tokens / window,
        "output_tokens": float(tokens),
        "window_s": window,
        "requests": float(len(done)),
    }


def errors(measured: dict[str, float], truth: dict[str, float]) -> dict[str, float]:
    """Signed error per metric: milliseconds for latencies, percent for throughput, requests for
    the count. A metric the tool does not report is absent."""
    out: dict[str, float] = {}
    for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
        if measured.get(key) is not None:
            out[key] = measured[key] - truth[key]
    if measured.get("output_tput"):
        out["output_tput_pct"] = 100.0 * (measured["output_tput"] / truth["output_tput"] - 1.0)
    if measured.get("requests") is not None:
        out["requests"] = measured["requests"] - truth["requests"]
    return out
