"""Client self-check figures beyond the core ones: queue delay and the stall bound.
The stamp-error, lag, CPU and in-flight keys are in harness/catalogue/core.py."""

from __future__ import annotations

from harness.record.catalogue.base import NEUTRAL, Metric, m

_QUEUE = ("the client's own queueing: issue -> request body on the socket, connection set-up "
          "excluded (TTFT starts at the socket, so this is load the server was not offered)")
METRICS: list[Metric] = [
    m("client_queue_delay_p50_ms", "Client queue delay p50", "ms", NEUTRAL, _QUEUE + ", p50",
      "client"),
    m("client_queue_delay_p99_ms", "Client queue delay p99", "ms", NEUTRAL, _QUEUE + ", p99",
      "client"),
    m("client_queue_delay_max_ms", "Client queue delay max", "ms", NEUTRAL, _QUEUE + ", worst",
      "client"),
    m("client_stall_share", "Client stall share of p99 E2EL", "ratio", NEUTRAL,
      "client loop lag max / p99 E2EL: how far the worst stall alone could move p99 E2EL and "
      "TPOT", "client"),
]
