"""The lifecycle every launched engine shares: free port, child process in its own process
group, readiness, a kept log, and a stop that never leaves a server running."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from harness.engines.base import LAUNCH_DIR, LaunchPlan

_LOG_TAIL_LINES = 40


class EngineStartError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Accept": "*/*"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""
    except (urllib.error.URLError, OSError, TimeoutError):
        return 0, b""


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL it when the harness dies, even by SIGKILL (Linux).

    SIGKILL rather than SIGTERM: an engine that is stopped (SIGSTOP, a debugger) or wedged
    never handles SIGTERM, and would outlive the harness forever. The death signal follows
    the *thread* that started the child, so engines are started from the main thread (the
    runner's). It survives exec, so it applies to the engine process itself (for llama.cpp the
    wrapper `harness.engines.llamacpp_server` *is* the server); processes the engine forks
    get no such signal (a container runtime's container, say)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _in_child(cpus: tuple[int, ...] | None, nice: int | None = None) -> None:
    """Before exec: die with the harness, keep to the engine's cores (the client's are the
    others), and run at the engine's niceness: threads it starts later inherit it, so the
    client's wake-ups preempt the engine's spinning threads on a shared core."""
    _die_with_parent()
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(cpus))
    if nice and hasattr(os, "nice"):
        os.nice(nice)


class ServerProcess:
    """One engine server as a child process. Use as a context manager."""

    def __init__(self, plan: LaunchPlan, workdir: Path, log_path: Path) -> None:
        self.plan = plan
        self.workdir = workdir
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.base_url = f"http://127.0.0.1:{plan.port}"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name, content in self.plan.files.items():
            (self.workdir / name).write_text(content)
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until stop()
            log.write(f"# argv: {self.plan.argv}\n".encode())
            log.flush()
        except OSError as e:  # the run directory is full or read-only: a results failure
            from harness.record.results import ResultsWriteError

            raise ResultsWriteError(self.log_path, e.strerror or str(e), errno_=e.errno) from e
        env = {**os.environ, **self.plan.env}
        argv = [a.replace(LAUNCH_DIR, str(self.workdir.resolve())) for a in self.plan.argv]
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() takes all of it
                preexec_fn=functools.partial(_in_child, self.plan.cpus, self.plan.nice),
            )
        except OSError as e:
            raise EngineStartError(f"could not start {self.plan.argv[0]!r}: {e}") from e
        finally:
            log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout_s: float) -> None:
        """Poll the readiness paths until each answers 200; fail fast if the child exits."""
        deadline = time.monotonic() + timeout_s
        pending = list(self.plan.ready_paths)
        while pending:
            if not self.alive():
                rc = self.proc.returncode if self.proc else None
                raise EngineStartError(
                    f"the engine exited with code {rc} before it was ready.\n"
                    f"--- last lines of {self.log_path} ---\n{log_tail(self.log_path)}"
                )
            status, _ = _get(self.base_url + pending[0], timeout=2.0)
            if status == 200:
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                self.stop()
                raise EngineStartError(
                    f"the engine did not answer {pending[0]} within {timeout_s:g} s "
                    f"(engine.startup_timeout_s).\n--- last lines of {self.log_path} ---\n"
                    f"{log_tail(self.log_path)}"
                )
            time.sleep(0.25)

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM the whole process group (SIGCONT too: a stopped engine handles nothing
        until it runs again), then SIGKILL what is left. A Ctrl-C pressed again meanwhile
        is held back until the engine is gone, so stopping cannot itself be interrupted."""
        p = self.proc
        if p is None:
            return
        with _sigint_deferred():
            if p.poll() is None:
                _signal_group(p.pid, signal.SIGTERM)
                _signal_group(p.pid, signal.SIGCONT)
                try:
                    p.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    _signal_group(p.pid, signal.SIGKILL)
                    p.wait()
            # Children that outlived the leader (same group) go too.
            _signal_group(p.pid, signal.SIGKILL)

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@contextlib.contextmanager
def _sigint_deferred():
    """Ignore SIGINT inside the block; a Ctrl-C that came meanwhile is raised after it."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if got and previous is signal.default_int_handler:
            raise KeyboardInterrupt


def wait_listening(proc: ServerProcess, port: int, timeout_s: float) -> None:
    """Until something accepts on 127.0.0.1:port (a helper with no health path); fail fast
    when the process exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1.0):
            return
        if not proc.alive() or time.monotonic() > deadline:
            proc.stop()
            raise EngineStartError(f"{proc.plan.argv[0]!r} never listened on port {port}.\n"
                                   f"--- last lines of {proc.log_path} ---\n"
                                   f"{log_tail(proc.log_path)}")
        time.sleep(0.25)


def get_json(url: str, timeout: float = 5.0) -> dict:
    import json

    status, body = _get(url, timeout)
    if status != 200:
        return {}
    try:
        obj = json.loads(body)
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {"value": obj}


def get_text(url: str, timeout: float = 10.0) -> str | None:
    status, body = _get(url, timeout)
    return body.decode(errors="replace") if status == 200 else None
