"""Start one of the testing servers as a child process and learn its port."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def spawn_server(module: str, *args: str, env: dict[str, str] | None = None) -> Iterator[int]:
    """Run `python -m module --port 0 *args`; yield the port it printed; stop it afterwards."""
    cmd = [sys.executable, "-m", module, "--port", "0", *args]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"{module} did not start (printed {line!r}, rc={proc.poll()})")
        yield int(line.split()[1])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def serve_forever(app: object, port: int) -> None:
    """Serve an aiohttp app on loopback and print `PORT n` (what spawn_server reads)."""
    import asyncio

    from aiohttp import web

    runner = web.AppRunner(app, access_log=None)  # type: ignore[arg-type]
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    print(f"PORT {runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()
