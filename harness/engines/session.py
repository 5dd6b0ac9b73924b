"""One engine serving a recipe's points: launch (or attach), readiness, version, restarts,
/metrics scrapes, and a guaranteed stop."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from harness.engines import cpu_split, profiler, prometheus
from harness.engines.base import EngineAdapter
from harness.engines.process import (
    EngineStartError,
    ServerProcess,
    free_port,
    get_json,
    get_text,
    log_tail,
)

log = logging.getLogger(__name__)


class EngineSession:
    """Use as a context manager; `restart()` after the server died mid-point."""

    def __init__(self, adapter: EngineAdapter, run_root: Path, launch_id: str,
                 max_concurrency: int) -> None:
        self.adapter = adapter
        self.run_root = run_root
        self.launch_id = launch_id
        self.max_concurrency = max_concurrency
        self.proc: ServerProcess | None = None
        self.base_url = ""
        self.version = "unknown"
        self.server_info: dict[str, Any] = {}
        self.launches = 0
        self._client_mask: set[int] | None = None  # this process's cores before pinning

    @property
    def trace_dir(self) -> Path:
        """Where a launched engine writes its profiler traces (engine.profile)."""
        return self.run_root / "profiles" / self.launch_id

    def headers(self) -> dict[str, str]:
        """What every call to the server carries (the API key, when one is set)."""
        return self._headers()

    @property
    def log_path(self) -> Path:
        return self.run_root / "servers" / f"{self.launch_id}.log"

    def start(self) -> None:
        a = self.adapter
        if not a.launches:
            self.base_url = a.base_url  # type: ignore[attr-defined]
            self._wait_attached(a.sc.engine.startup_timeout_s)
            self._identify()
            return
        port = free_port()
        plan = a.launch_plan(port, self.max_concurrency)
        plan.env.update(profiler.launch_env(a.sc, self.trace_dir))
        workdir = self.run_root / "launch" / self.launch_id
        self.proc = ServerProcess(plan, workdir, self.log_path)
        self.launches += 1
        log.info("starting %s on port %d (log: %s)", a.kind, port, self.log_path)
        self.proc.start()
        if plan.cpus:
            # The client keeps the cores the engine was not given (harness/engines/cpu_split.py).
            self._client_mask = cpu_split.pin(cpu_split.client_cores(list(plan.cpus)))
        try:  # whatever interrupts us from here on (Ctrl-C included), the engine goes
            self.proc.wait_ready(a.sc.engine.startup_timeout_s)
            self.base_url = self.proc.base_url
            self._identify()
        except BaseException:
            self.proc.stop()
            raise

    def _identify(self) -> None:
        self.server_info = self._server_info()
        self.version = self.adapter.version(self.server_info)
        check_version(self.adapter.sc.engine.version, self.version)

    def _key(self) -> str:
        env = self.adapter.sc.engine.api_key_env
        return (os.environ.get(env) if env else None) or ""

    def _scrub(self, text: str) -> str:
        """Servers echo request headers in error bodies: the key never reaches an error."""
        key = self._key()
        return text.replace(key, "***") if key else text

    def _headers(self) -> dict[str, str]:
        key = self._key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _wait_attached(self, timeout_s: float) -> None:
        import urllib.error

        deadline = time.monotonic() + timeout_s
        url = self.base_url + "/v1/models"
        last = ""
        while time.monotonic() < deadline:
            try:
                with _probe(url, self._headers()) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as e:
                if 300 <= e.code < 400:  # the probe never follows: the key stays home
                    where = e.headers.get("Location", "(no Location header)")
                    raise EngineStartError(
                        f"{url} redirected (HTTP {e.code}) to {where}; set engine.url to the "
                        "final URL (redirects are not followed, so the API key is never sent "
                        "to another origin)") from None
                last = self._scrub(f"{e}: {_body(e)}")[:400]  # scrubbed whole, then cut
                if e.code in (401, 403):  # a wrong key stays wrong: no point waiting
                    raise EngineStartError(
                        f"{url} refused the request ({last}); check engine.api_key_env") from None
            except OSError as e:  # URLError is an OSError
                last = self._scrub(str(e))
            time.sleep(0.5)
        raise EngineStartError(
            f"no OpenAI-compatible server answered {url} within "
            f"{timeout_s:g} s ({last}); check engine.url and engine.api_key_env"
        )

    def _server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {}
        for path in ("/version", "/props", "/get_server_info"):
            got = get_json(self.base_url + path)
            if got:
                info.update({k: v for k, v in got.items() if isinstance(v, str | int | float)})
        return info

    def alive(self) -> bool:
        return self.proc is None or self.proc.alive()

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None
        cpu_split.restore(self._client_mask)
        self._client_mask = None

    def scrape(self) -> prometheus.Sample:
        text = get_text(self.base_url + self.adapter.counters.metrics_path)
        return prometheus.parse(text) if text else {}

    @property
    def launches_engine(self) -> bool:
        return self.adapter.launches

    def hang_reason(self, stall_s: float) -> str:
        return (f"engine hung: most requests received nothing for {stall_s:g} s "
                f"(client.stall_timeout_s); last log lines:\n{log_tail(self.log_path)}")

    def failure_reason(self) -> str:
        rc = self.proc.proc.returncode if self.proc and self.proc.proc else None
        return f"engine process died (exit code {rc}); last log lines:\n{log_tail(self.log_path)}"

    def __enter__(self) -> EngineSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _probe(url: str, headers: dict[str, str]) -> Any:
    """GET with urllib, redirects refused (a 3xx raises HTTPError): urllib would forward every
    header, Authorization included, to wherever a redirect points."""
    import urllib.request

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(_NoRedirect)
    return opener.open(urllib.request.Request(url, headers=headers), timeout=5)


def _body(e: Any) -> str:
    try:
        return e.read(2000).decode(errors="replace").strip()
    except OSError:
        return ""


def check_version(expected: str | None, running: str) -> None:
    """engine.version is a claim about the server: the version it reports must contain it
    (a leading v ignored), else the launch fails before any point is labelled with it."""
    if not expected:
        return
    want = str(expected).strip().lstrip("vV")
    if want and want in running:
        return
    raise EngineStartError(
        f"engine.version is {expected!r} but the server reports {running!r}; set "
        "engine.version to the version that runs (or null to record whatever runs)")
