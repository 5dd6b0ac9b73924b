"""One engine serving a recipe's points: launch (or attach), readiness, version, restarts,
/metrics scrapes, and a guaranteed stop."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from harness.client.plain_http import open_no_redirect
from harness.engines import cpu_split, profiler, prometheus
from harness.engines.base import LAUNCH_DIR, EngineAdapter, LaunchPlan
from harness.engines.helpers import HelperPlan, free_base_port, helper_plans, port_offsets
from harness.engines.process import (
    EngineStartError,
    ServerProcess,
    free_port,
    get_json,
    get_text,
    log_tail,
    wait_listening,
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
        # started with the engine (engine.helpers), as (role, process) in start order
        self.helpers: list[tuple[str, ServerProcess]] = []
        self.metrics_url = ""  # the engine's own, when a router fronts it
        self._client_mask: set[int] | None = None  # this process's cores before pinning
        self.deployment: Any = None  # engine=multinode: the roles on Slurm, in place of proc

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
            self.metrics_url = (a.sc.engine.metrics_url or self.base_url).rstrip("/")
            self._wait_attached(a.sc.engine.startup_timeout_s)
            self._identify()
            return
        deployment = a.deployment(self.run_root, self.launch_id)
        if deployment is not None:
            self.launches += 1
            self.deployment = deployment
            try:
                deployment.start()
                self.base_url = self.metrics_url = deployment.base_url
                self._identify()
            except BaseException:
                self.stop()
                raise
            return
        eng = a.sc.engine
        base = free_base_port(port_offsets(a.sc)) if eng.helpers or eng.port_offset else \
            free_port()
        plan = a.launch_plan(base + eng.port_offset, self.max_concurrency)
        plan.env.update(profiler.launch_env(a.sc, self.trace_dir))
        workdir = self.run_root / "launch" / self.launch_id
        helpers = helper_plans(a.sc, base, {"host": eng.host, "tp": str(a.sc.topology.tp),
                                            "dp": str(a.sc.topology.tp if a.sc.topology
                                                      .dp_attention else 1),
                                            "launch_dir": LAUNCH_DIR, "model": a.checkpoint,
                                            "served_name": a.served_model_name,
                                            "python": a.python()})
        self.launches += 1
        try:  # whatever interrupts us from here on (Ctrl-C included), everything started goes
            for h in (h for h in helpers if h.role == "daemon"):  # before the engine
                self._start_helper(h, workdir)
            self.proc = ServerProcess(plan, workdir, self.log_path)
            log.info("starting %s on port %d (log: %s)", a.kind, plan.port, self.log_path)
            self.proc.start()
            if plan.cpus:
                # The client keeps the cores the engine was not given (cpu_split.py).
                self._client_mask = cpu_split.pin(cpu_split.client_cores(list(plan.cpus)))
            self.proc.wait_ready(eng.startup_timeout_s)
            self.base_url = self.metrics_url = self.proc.base_url
            for h in (h for h in helpers if h.role == "router"):  # in front, once it serves
                helper = self._start_helper(h, workdir)
                if h.fronts:
                    self.base_url = helper.base_url
            self._identify()
        except BaseException:
            self.stop()
            raise

    def _start_helper(self, h: HelperPlan, workdir: Path) -> ServerProcess:
        """A helper in the engine's container image when it has one (with the setup steps:
        what they install, a router say, is in the image only then), else on this host."""
        plan = self.adapter.containerize(LaunchPlan(
            argv=h.argv, env=h.env, port=h.port,
            ready_paths=(h.health_path,) if h.health_path else ()))
        proc = ServerProcess(plan, workdir, self.log_path.with_name(
            f"{self.launch_id}.{h.name}.log"))
        self.helpers.append((h.role, proc))
        log.info("starting helper %s on port %d", h.name, h.port)
        proc.start()
        proc.wait_ready(self.adapter.sc.engine.startup_timeout_s)
        if not h.health_path:
            wait_listening(proc, h.port, self.adapter.sc.engine.startup_timeout_s)
        return proc

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
            got = get_json((self.metrics_url or self.base_url) + path)  # the engine's own
            if got:
                info.update({k: v for k, v in got.items() if isinstance(v, str | int | float)})
        return info

    def alive(self) -> bool:
        if self.deployment is not None:
            return bool(self.deployment.alive())
        return (self.proc is None or self.proc.alive()) and all(p.alive() for _, p in self.helpers)

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        """Routers first (nothing reaches a stopped engine through them), then the engine,
        then the daemons it used; a deployment stops all its roles."""
        if self.deployment is not None:
            self.deployment.stop()
            self.deployment = None
        for role, p in reversed(self.helpers):
            if role == "router":
                p.stop()
        if self.proc is not None:
            self.proc.stop()
            self.proc = None
        for role, p in reversed(self.helpers):
            if role != "router":
                p.stop()
        self.helpers = []
        cpu_split.restore(self._client_mask)
        self._client_mask = None

    def deployment_facts(self) -> dict[str, Any]:
        """The nodes and roles that served the points (engine=multinode), else nothing."""
        return self.deployment.facts() if self.deployment is not None else {}

    def process_roots(self) -> list[int]:
        """The processes on this host that serve the points (engine and helpers, or a
        deployment's steps): with the harness, what the host's foreign-CPU reading leaves out."""
        if self.deployment is not None:
            return list(self.deployment.local_pids())
        procs = [self.proc, *(p for _, p in self.helpers)]
        return [p.proc.pid for p in procs if p is not None and p.proc is not None]

    def role_metrics(self) -> dict[str, str]:
        """Every role's own /metrics text, by step label (engine=multinode), else nothing."""
        return self.deployment.metrics_texts() if self.deployment is not None else {}

    def scrape(self) -> prometheus.Sample:
        text = get_text((self.metrics_url or self.base_url) + self.adapter.counters.metrics_path)
        return prometheus.parse(text) if text else {}

    @property
    def launches_engine(self) -> bool:
        return self.adapter.launches

    def hang_reason(self, stall_s: float) -> str:
        return (f"engine hung: most requests received nothing for {stall_s:g} s "
                f"(client.stall_timeout_s); last log lines:\n{log_tail(self.log_path)}")

    def failure_reason(self) -> str:
        if self.deployment is not None:
            return f"engine died: {self.deployment.failure_reason()}"
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

    return open_no_redirect(urllib.request.Request(url, headers=headers), timeout=5)


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
