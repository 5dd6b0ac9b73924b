"""The engine emulator's control endpoints: the profiler and the prefix-cache reset, as each
engine's server offers them (harness/engines/profiler.py cites the sources).

    vllm    POST /start_profile, /stop_profile only when VLLM_TORCH_PROFILER_DIR is set (else
            404, as vLLM registers no route); POST /reset_prefix_cache
    sglang  /start_profile (GET or POST, optional JSON `output_dir`, else
            SGLANG_TORCH_PROFILER_DIR), /stop_profile; /flush_cache (GET or POST), 400 while
            requests run
    atom    POST /start_profile, /stop_profile (the reply lists the traces); traces under
            ATOM_TORCH_PROFILER_DIR
    trtllm  none

The stop writes one small JSON "trace" (the window's start and stop times and the decode steps
in between) where the real engine would write its torch trace. GET /debug/calls lists every
control call with its perf_counter time (same clock as the client's on one host), for tests.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from harness.testing.emulator_cache import PrefixCache

PROFILER_ENV = {"vllm": "VLLM_TORCH_PROFILER_DIR", "sglang": "SGLANG_TORCH_PROFILER_DIR",
                "atom": "ATOM_TORCH_PROFILER_DIR"}


class Control:
    def __init__(self, emulator: Any) -> None:
        self.em = emulator
        self.calls: list[dict[str, Any]] = []
        self.started: float | None = None
        self.out_dir: Path | None = None
        self.steps_at_start = 0
        self.n = 0

    def _log(self, path: str) -> None:
        self.calls.append({"path": path, "t": time.perf_counter()})

    def _steps(self) -> int:
        return sum(r.forward_ct for r in self.em.ranks)

    async def start(self, request: web.Request) -> web.Response:
        self._log("/start_profile")
        engine = self.em.o.engine
        out = os.environ.get(PROFILER_ENV[engine])
        if engine == "sglang" and request.can_read_body:
            body = orjson.loads(await request.read() or b"{}") or {}
            out = body.get("output_dir") or out
        self.out_dir = Path(out or "/tmp")
        self.started = time.perf_counter()
        self.steps_at_start = self._steps()
        if engine == "sglang":
            return web.Response(text="Start profiling.\n")
        if engine == "atom":
            return web.json_response({"status": "success", "message": "Profiling started"})
        return web.Response(status=200)

    async def stop(self, _: web.Request) -> web.Response:
        self._log("/stop_profile")
        if self.started is None or self.out_dir is None:
            return web.Response(status=400, text="profiler not started\n")
        self.n += 1
        self.out_dir.mkdir(parents=True, exist_ok=True)
        trace = self.out_dir / f"emulated-{self.em.o.engine}-{os.getpid()}-{self.n}.trace.json"
        trace.write_bytes(orjson.dumps({"start": self.started, "stop": time.perf_counter(),
                                        "decode_steps": self._steps() - self.steps_at_start}))
        self.started = None
        engine = self.em.o.engine
        if engine == "atom":
            return web.json_response({"status": "success", "traces": [str(trace)],
                                      "message": "Profiling stopped. Trace files generated."})
        if engine == "sglang":
            return web.Response(text="Stop profiling. This will take some time.\n")
        return web.Response(status=200)

    async def reset(self, request: web.Request) -> web.Response:
        self._log(request.path)
        if self.em.o.engine == "sglang" and any(r.active for r in self.em.ranks):
            return web.Response(status=400, text="Cache not flushed: requests are running\n")
        o = self.em.o
        for r in self.em.ranks:
            r.cache = PrefixCache(o.cache_blocks, o.host_blocks)
        return web.Response(text="Cache flushed.\n")

    async def debug_calls(self, _: web.Request) -> web.Response:
        return web.json_response(self.calls)


def add_routes(app: web.Application, emulator: Any) -> Control:
    ctl = Control(emulator)
    engine = emulator.o.engine
    app.router.add_get("/debug/calls", ctl.debug_calls)
    profiling = engine in ("sglang", "atom") or (
        engine == "vllm" and os.environ.get(PROFILER_ENV["vllm"]))
    if profiling:
        app.router.add_post("/start_profile", ctl.start)
        app.router.add_post("/stop_profile", ctl.stop)
        if engine == "sglang":
            app.router.add_get("/start_profile", ctl.start)
            app.router.add_get("/stop_profile", ctl.stop)
    if engine == "vllm":
        app.router.add_post("/reset_prefix_cache", ctl.reset)
    if engine == "sglang":
        app.router.add_post("/flush_cache", ctl.reset)
        app.router.add_get("/flush_cache", ctl.reset)
    return ctl
