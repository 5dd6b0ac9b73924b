"""Dynamo's session headers on an agentic replay, as aiperf 0.13.0 sends them
(AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID; here
`scenario.correlation_headers=[X-Dynamo-Session-ID]`, off by default as upstream): a real
`harness sweep` against a loopback server that records every request's headers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web

from harness.testing.scripted_server import Defaults, ScriptedServer
from tests.helpers import harness

SESSION, PARENT = "X-Dynamo-Session-ID", "X-Dynamo-Parent-Session-ID"
# Every tree replays from its first turn, sub-agents included, idle gaps cut short.
SHORT = ["engine=endpoint", "scenarios=agentic-weka-cpu", "concurrency=[2]",
         "scenario.duration_s=3", "scenario.min_measured_s=1", "scenario.idle_cap_s=0.002",
         "scenario.tree_cap_s=0.004", "scenario.warmup_requests_per_lane=0",
         "scenario.start_min_ratio=0", "scenario.start_max_ratio=0"]


class Recording(ScriptedServer):
    """The scripted server, keeping each chat request's headers."""

    def __init__(self) -> None:
        super().__init__(Defaults(ttft_ms=1, itl_ms=0.2))
        self.headers: list[dict[str, str]] = []

    async def completions(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(dict(request.headers))
        return await super().completions(request)


@pytest.fixture
def server() -> Iterator[tuple[Recording, str]]:
    rec, loop = Recording(), asyncio.new_event_loop()
    started, port = threading.Event(), []

    async def up() -> web.AppRunner:
        runner = web.AppRunner(rec.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        return runner

    def serve() -> None:
        asyncio.set_event_loop(loop)
        runner = loop.run_until_complete(up())
        started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    assert started.wait(30)
    try:
        yield rec, f"http://127.0.0.1:{port[0]}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join(30)


def _lower(h: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in h.items()}


def test_dynamo_session_headers_as_aiperf_sends_them(tmp_path, server) -> None:
    rec, url = server
    r = harness("sweep", *SHORT, f"engine.url={url}",
                "scenario.correlation_headers=[X-Dynamo-Session-ID]",
                f"results_dir={tmp_path}", "run_id=d", timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    sent = [_lower(h) for h in rec.headers]
    assert len(sent) >= 10
    s, p, c = SESSION.lower(), PARENT.lower(), "x-correlation-id"
    # the session id on every request: that request's own X-Correlation-ID
    assert all(h[s] == h[c] for h in sent)
    roots = {h[c] for h in sent if p not in h}
    children = [h for h in sent if p in h]
    assert children, "the traces' sub-agents sent nothing"
    # the parent id on sub-agent requests only: the id of the tree's root session, never the
    # request's own, and one parent per sub-agent session
    assert all(h[p] in roots and h[p] != h[c] for h in children)
    parent_of: dict[str, set[str]] = {}
    for h in children:
        parent_of.setdefault(h[c], set()).add(h[p])
    assert all(len(v) == 1 for v in parent_of.values())
    assert not roots & set(parent_of)  # a root session never names a parent


def test_no_dynamo_headers_by_default(tmp_path, server) -> None:
    rec, url = server
    r = harness("sweep", *SHORT, f"engine.url={url}", f"results_dir={tmp_path}", "run_id=n",
                timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    sent = [_lower(h) for h in rec.headers]
    assert sent and all("x-correlation-id" in h for h in sent)
    assert not any(SESSION.lower() in h or PARENT.lower() in h for h in sent)


def test_the_parent_header_alone_is_refused_with_the_switch_named(tmp_path) -> None:
    r = harness("sweep", *SHORT, "engine.url=http://127.0.0.1:9",
                f"scenario.correlation_headers=[{PARENT}]", f"results_dir={tmp_path}",
                timeout=120)
    assert r.returncode == 2, r.stderr
    assert "scenario.correlation_headers" in r.stderr and SESSION in r.stderr
    assert list(tmp_path.iterdir()) == []
