"""Scenario checks every kind shares (called from harness.config.validate's
check_combinations): a trace corpus named so a replay can read it, and routing headers AIPerf
can send. Which kinds read traces or send headers is each workload class's to say
(harness.workloads.registry.check_kinds)."""

from __future__ import annotations

import re

from harness.config.errors import ConfigError, Where
from harness.config.schema import SweepConfig

# scenario.correlation_headers' choices: the routing headers AIPerf can add to every agentic
# request, each carrying the request's X-Correlation-ID (its stream's session id), so a router
# in front of a DP engine keeps a session on one rank (harness.workloads.replay_sessions sends
# them). Upstream switches them on with AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID and
# AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID (off by default; SemiAnalysisAI/
# agentx-harness:src/aiperf/common/environment.py@de0e17de8b88e6736446e5b03d4e2305271638ce
# `_HTTPSettings`, set in `build_headers` of src/aiperf/transports/base_transports.py
# @70af1f538695fb51f612710ce55a728f389a4ead). X-Dynamo-Session-ID is PyPI aiperf 0.13.0's
# AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID (off by default; aiperf/common/
# environment.py, aiperf/transports/base_transports.py `build_headers`).
CORRELATION_HEADERS = ("X-Session-ID", "X-SMG-Routing-Key", "X-Dynamo-Session-ID")


_DATASET_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def check_dataset(sc: SweepConfig, where: Where) -> None:
    """A corpus by name (docs/corpus.md): a Hub id looks like owner/name, a split is named."""
    ds = sc.scenario.dataset
    if not (ds.id or ds.local_dir):
        return
    if ds.id and not _DATASET_ID.match(ds.id):
        raise ConfigError.at(where, "scenario.dataset.id",
                             f"{ds.id!r} is not a Hub dataset id (owner/name)",
                             "e.g. scenario.dataset.id=semianalysisai/cc-traces-weka-062126-256k, "
                             "or scenario.dataset.local_dir=PATH for a local copy")
    if not ds.split:
        raise ConfigError.at(where, "scenario.dataset.split",
                             "empty split name", "use scenario.dataset.split=train (the corpus's)")


def check_header_names(headers: list[str], key: str, where: Where) -> None:
    """Only the routing headers AIPerf derives from the correlation id (docs/replay.md)."""
    for h in headers:
        if h not in CORRELATION_HEADERS:
            raise ConfigError.at(where, key,
                                 f"{h!r} is not a header AIPerf fills with the correlation id",
                                 f"use any of {', '.join(CORRELATION_HEADERS)} (exact spelling), "
                                 "e.g. scenario.correlation_headers=[X-SMG-Routing-Key]")


def check_correlation_headers(sc: SweepConfig, where: Where) -> None:
    """Routing headers only where requests carry a correlation id: AIPerf's request style (and
    a kind that sends them, its workload class's `sends_correlation_ids`)."""
    key, scen = "scenario.correlation_headers", sc.scenario
    check_header_names(scen.correlation_headers, key, where)
    if scen.correlation_headers and scen.request_style != "aiperf":
        raise ConfigError.at(where, key,
                             f"request_style={scen.request_style} sends no session headers",
                             "use scenario.request_style=aiperf, or drop "
                             "scenario.correlation_headers")
