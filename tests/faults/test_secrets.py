"""Nothing escapes its place: the API key never reaches another origin nor a stored
error, for the streaming client and for the attach-mode startup probe; a cancellation aimed at
the task stopping the health probe (Ctrl-C) is not swallowed; the health module does not
import the client's.

Real servers on loopback ports (http.server in threads): the configured origin, and a second
one that records every request it gets."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
import yaml

from harness.client.health import ClientHealth, HealthProbe
from harness.client.streaming import ClientSettings, StreamingClient
from harness.config.schema_bench import ClientConfig, ValidityConfig
from harness.engines.process import EngineStartError
from harness.engines.session import EngineSession
from harness.records import RequestRecord, RequestSpec
from tests.helpers import both_transports

# The streaming client's tests run over both client.transport readers.
transport = both_transports(__name__, autouse=False)

KEY = "sk-test-0123456789abcdef-SECRET"
ENV = "HARNESS_TEST_SECRET_KEY"


class _Server:
    def __init__(self, reply: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.requests: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                outer.requests.append(dict(self.headers))
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                reply(self)

            do_GET = do_POST = _any

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@contextlib.contextmanager
def serve(reply: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[_Server]:
    s = _Server(reply)
    t = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()


def _send(h: BaseHTTPRequestHandler, status: int, body: bytes,
          headers: dict[str, str] | None = None) -> None:
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def _redirect_to(target: str) -> Callable[[BaseHTTPRequestHandler], None]:
    return lambda h: _send(h, 302, b"", {"Location": target + h.path})


def _echo_headers(pad: int) -> Callable[[BaseHTTPRequestHandler], None]:
    """A 401 whose body quotes the request's headers, as some proxies' do."""
    def reply(h: BaseHTTPRequestHandler) -> None:
        echo = "".join(f"{k}: {v}\n" for k, v in h.headers.items())
        _send(h, 401, ("x" * pad + "unauthorized; you sent:\n" + echo).encode())
    return reply


def _post(url: str, monkeypatch: pytest.MonkeyPatch) -> RequestRecord:
    monkeypatch.setenv(ENV, KEY)

    async def go() -> RequestRecord:
        async with StreamingClient(ClientSettings(url, api_key_env=ENV)) as c:
            body = b'{"prompt": "x", "max_tokens": 4, "stream": true}'
            return await c.send(RequestSpec("r0", "/v1/completions", body, 1, 4))

    return asyncio.run(go())


@pytest.mark.usefixtures("transport")
def test_client_never_follows_a_redirect_to_another_origin(monkeypatch) -> None:
    with serve(lambda h: _send(h, 200, b"{}")) as other, serve(_redirect_to(other.url)) as home:
        rec = _post(home.url, monkeypatch)
    assert home.requests[0]["Authorization"] == f"Bearer {KEY}"  # the configured origin: yes
    assert other.requests == []  # the other origin: nothing at all
    assert not rec.ok and rec.http_status == 302
    assert f"redirected to {other.url}/v1/completions" in rec.error
    assert "set engine.url to the final URL" in rec.error


@pytest.mark.usefixtures("transport")
@pytest.mark.parametrize("pad", [0, 470], ids=["short", "key-across-the-500-char-cut"])
def test_client_error_text_never_holds_the_key(monkeypatch, pad: int) -> None:
    with serve(_echo_headers(pad)) as home:
        rec = _post(home.url, monkeypatch)
    assert not rec.ok and rec.error.startswith("HTTP 401")
    assert KEY not in rec.error and KEY[:8] not in rec.error
    if not pad:
        assert "Authorization: Bearer ***" in rec.error


def _attached(url: str, monkeypatch: pytest.MonkeyPatch) -> EngineSession:
    monkeypatch.setenv(ENV, KEY)
    engine = SimpleNamespace(api_key_env=ENV, startup_timeout_s=5.0, metrics_url=None,
                             version=None)
    adapter = SimpleNamespace(launches=False, base_url=url, sc=SimpleNamespace(engine=engine),
                              version=lambda info: "test")
    return EngineSession(adapter, None, "t", 1)  # type: ignore[arg-type]


def test_attach_probe_never_follows_a_redirect_to_another_origin(monkeypatch) -> None:
    with serve(lambda h: _send(h, 200, b'{"data": []}')) as other, \
            serve(_redirect_to(other.url)) as home, pytest.raises(EngineStartError) as e:
        _attached(home.url, monkeypatch).start()
    assert home.requests[0]["Authorization"] == f"Bearer {KEY}"
    assert other.requests == []
    assert f"redirected (HTTP 302) to {other.url}/v1/models" in str(e.value)
    assert "set engine.url to the final URL" in str(e.value)


def test_attach_probe_sends_the_key_home_and_attaches(monkeypatch) -> None:
    def reply(h: BaseHTTPRequestHandler) -> None:
        ok = h.path == "/v1/models" and h.headers.get("Authorization") == f"Bearer {KEY}"
        _send(h, 200 if ok else 404, b'{"data": []}')

    with serve(reply) as home:
        session = _attached(home.url, monkeypatch)
        session.start()
    assert session.version == "test" and home.requests[0]["Authorization"] == f"Bearer {KEY}"


def test_attach_probe_error_never_holds_the_key(monkeypatch) -> None:
    with serve(_echo_headers(0)) as home, pytest.raises(EngineStartError) as e:
        _attached(home.url, monkeypatch).start()
    assert "401" in str(e.value) and "Bearer ***" in str(e.value)
    assert KEY not in str(e.value)


class _Meter:
    def reset_inflight_area(self) -> None:
        pass

    def inflight_area(self) -> float:
        return 0.0


def test_cancelling_the_task_stopping_the_probe_propagates() -> None:
    """Ctrl-C arrives as a cancellation of the main task. It once landed while stop() awaited
    the probe's own (cancelled) task and was swallowed with the probe's. stop() now awaits
    nothing (the lag timer is a chain of timer callbacks), so a cancellation aimed at the task
    calling it reaches that task; and stop() ends the chain: no wake-up after it."""
    async def main() -> None:
        probe = HealthProbe(_Meter(), 1.0, 0.95)
        probe.start()
        await asyncio.sleep(0.02)
        stopping = asyncio.create_task(probe.stop())
        stopping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopping
        assert probe._lags, "the lag timer woke while the phase ran"
        health = await probe.stop()
        assert isinstance(health, ClientHealth)
        woke = len(probe._lags)
        await asyncio.sleep(0.03)  # six of its periods
        assert len(probe._lags) == woke, "a lag timer outlived stop()"

    asyncio.run(main())


def test_health_module_does_not_import_the_client() -> None:
    code = ("import sys, harness.client.health; "
            "assert 'harness.client.streaming' not in sys.modules, 'client_health imports client'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_secret_interpolated_into_a_config_is_never_written_out(tmp_path) -> None:
    """`${oc.env:KEY}` is saved as the interpolation, not the secret it resolves to."""
    from harness.testing.spawn import spawn_server

    env = {**os.environ, "HARNESS_TEST_SECRET": "s3cr3t-do-not-write"}
    with spawn_server("harness.testing.scripted_server", "--ttft-ms", "5") as port:
        r = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", "sweep", "engine=endpoint",
             f"engine.url=http://127.0.0.1:{port}", "concurrency=[1]",
             "scenario.requests_per_conc=1", "scenario.warmup_per_conc=0",
             "scenario.description=${oc.env:HARNESS_TEST_SECRET}",
             f"results_dir={tmp_path}", "run_id=s"],
            capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    written = b"".join(f.read_bytes() for f in (tmp_path / "s").rglob("*") if f.is_file())
    assert b"s3cr3t-do-not-write" not in written
    configs = list((tmp_path / "s" / "configs").glob("*.yaml"))
    assert configs and "${oc.env:HARNESS_TEST_SECRET}" in configs[0].read_text()
    # the saved config is the whole resolved config: the schema's defaults the recipes do not
    # restate are written too (provenance), beside what the overrides set
    saved = yaml.safe_load(configs[0].read_text())
    assert saved["client"]["max_stamp_err_ms"] == ClientConfig.max_stamp_err_ms
    assert saved["validity"]["host"] == ValidityConfig.host
    assert saved["scenario"]["requests_per_conc"] == 1 and saved["concurrency"] == [1]
