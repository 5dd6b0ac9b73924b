"""One engine serving a recipe's points: launch (or attach), readiness, version, restarts,
/metrics scrapes, and a guaranteed stop."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from harness.engines import prometheus
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
        workdir = self.run_root / "launch" / self.launch_id
        self.proc = ServerProcess(plan, workdir, self.log_path)
        self.launches += 1
        log.info("starting %s on port %d (log: %s)", a.kind, port, self.log_path)
        self.proc.start()
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

    def _headers(self) -> dict[str, str]:
        env = self.adapter.sc.engine.api_key_env
        key = os.environ.get(env) if env else None
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _wait_attached(self, timeout_s: float) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                req = urllib.request.Request(self.base_url + "/v1/models", headers=self._headers())
                with urllib.request.urlopen(req, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError as e:  # URLError and HTTPError are OSErrors
                last = str(e)
            time.sleep(0.5)
        raise EngineStartError(
            f"no OpenAI-compatible server answered {self.base_url}/v1/models within "
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

    def scrape(self) -> prometheus.Sample:
        text = get_text(self.base_url + "/metrics")
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
