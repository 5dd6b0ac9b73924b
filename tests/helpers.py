"""Small helpers shared by tests that run the real CLI."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

# Every process this test session starts inherits this tag, so engine checks see only our own
# engines, never those of another suite (or a developer's run) on the same machine.
SESSION_TAG = "HARNESS_TEST_SESSION"
os.environ.setdefault(SESSION_TAG, uuid.uuid4().hex)


@functools.cache
def shipped_yaml(path: Path) -> Any:
    """A shipped YAML file's data as Hydra loads it, parsed once per session with libyaml's
    parser (harness.config.fast_yaml; tests/config/test_fast_yaml.py holds it equal to
    OmegaConf's own loader on every shipped file). The multi-node recipes are ~5 MB of YAML,
    ~10 s of CPU a pass with the pure-Python parser. Shared: read it, never change it."""
    import yaml

    from harness.config.fast_yaml import fast_loader

    return yaml.load(Path(path).read_text(), Loader=fast_loader())


def harness(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout)


def our_processes(pattern: str) -> list[int]:
    """PIDs of processes matching `pattern` that this test session started, still running."""
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    tag = f"{SESSION_TAG}={os.environ[SESSION_TAG]}".encode()
    mine = []
    for pid in map(int, out.split()):
        try:
            if tag in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                mine.append(pid)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return mine


def engine_pids() -> list[int]:
    """Embedded llama.cpp servers started by this test session and still running."""
    return our_processes("harness.engines.llamacpp_server")


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


# The client's own verdict on itself: on a busy machine it (rightly) flags its stamp error or
# CPU share. A test whose subject is not the client's accuracy accepts those and nothing else.
CLIENT_RULES = {"client_stamp_error", "client_cpu_share", "client_queue_delay",
                "client_stall"}


def failed_rules(point: dict) -> set[str]:
    return {r["name"] for r in point.get("validity") or () if not r["ok"]}


# The host rule (harness.record.bench_rules): a neighbour's load through the window.
HOST_RULES = {"host_foreign_cpu", "host_steal"}


def assert_valid_unless_the_instrument_flagged(point: dict) -> None:
    """The point is valid, or failed only by the rules on the measurement itself (the client's
    self-check, the host's load): the harness refusing to vouch for a disturbed point is right,
    and a test of what the point holds must not fail on what the machine did beside it."""
    assert point["status"] == "ok", point["invalid_reasons"]
    assert failed_rules(point) <= CLIENT_RULES | HOST_RULES, point["invalid_reasons"]


@asynccontextmanager
async def loopback_app(path: str, handler: Callable[..., Awaitable[object]]
                       ) -> AsyncIterator[str]:
    """A one-route aiohttp server on loopback, for as long as the block runs: its base URL."""
    from aiohttp import web

    app = web.Application()
    app.router.add_post(path, handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def both_transports(module_name: str, autouse: bool = True):
    """A fixture that runs each test of `module_name` once per `client.transport`: the module's
    own `ClientSettings` name is swapped for one whose default transport is the parameter, so
    the test body (and what it asserts) is the same for both."""
    import functools

    import pytest

    from harness.client.streaming import ClientSettings

    @pytest.fixture(autouse=autouse, params=["aiohttp", "httptools"])
    def transport(request, monkeypatch) -> str:
        monkeypatch.setattr(sys.modules[module_name], "ClientSettings",
                            functools.partial(ClientSettings, transport=request.param))
        return request.param

    return transport


class NoDeployment:
    """What a test's stand-in for EngineSession says about a multi-node deployment: none."""

    def role_metrics(self) -> dict:
        return {}

    def deployment_facts(self) -> dict:
        return {}

    def process_roots(self) -> list:
        return []
