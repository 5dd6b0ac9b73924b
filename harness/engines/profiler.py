"""The engine's own profiler around a point's measured window, and its prefix-cache reset
before a point (`engine.profile`, `engine.reset_cache_before_point`; docs/slo.md).

What each server offers, from its source:
- vLLM: POST /start_profile and /stop_profile, registered only when the server was started
  with VLLM_TORCH_PROFILER_DIR (the traces go there; vllm/entrypoints/openai/api_server.py@
  048027fb, `if envs.VLLM_TORCH_PROFILER_DIR`; newer trees move the routes to
  vllm/entrypoints/serve/profile/api_router.py); POST /reset_prefix_cache empties the prefix
  cache.
- SGLang: /start_profile (GET or POST, a JSON body whose `output_dir` says where the trace
  goes, else SGLANG_TORCH_PROFILER_DIR) and /stop_profile; /flush_cache (GET or POST) empties
  the radix cache, refused while requests run (python/sglang/srt/entrypoints/http_server.py@
  9c0549b7).
- ATOM: POST /start_profile and /stop_profile (the reply lists the trace files), traces under
  ATOM_TORCH_PROFILER_DIR (atom/entrypoints/openai/api_server.py and atom/config.py@ffdf3bb5);
  no cache reset.
- TensorRT-LLM: trtllm-serve's `register_routes` (tensorrt_llm/serve/openai_server.py@e7f7345e)
  has health, version, models, metrics, perf_metrics, kv_cache_events and the OpenAI routes,
  no profiler and no cache reset; llama.cpp neither: both refused before launch.

Calls are blocking (urllib, redirects refused) and made between the client's phases, never
during one. Times are perf_counter stamps, so a test can check the window lies inside them.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class ProfilerEndpoints:
    start: str
    stop: str
    trace_dir_env: str
    dir_in_body: bool = False  # SGLang takes the output directory with the start call


PROFILERS: dict[str, ProfilerEndpoints] = {
    "vllm": ProfilerEndpoints("/start_profile", "/stop_profile", "VLLM_TORCH_PROFILER_DIR"),
    "sglang": ProfilerEndpoints("/start_profile", "/stop_profile", "SGLANG_TORCH_PROFILER_DIR",
                                dir_in_body=True),
    "atom": ProfilerEndpoints("/start_profile", "/stop_profile", "ATOM_TORCH_PROFILER_DIR"),
}
CACHE_RESETS: dict[str, str] = {"vllm": "/reset_prefix_cache", "sglang": "/flush_cache"}


def engine_family(sc: Any) -> str | None:
    """The engine behind the point: the adapter kind, or an endpoint's declared family."""
    e = sc.engine
    return e.family if e.kind == "endpoint" else e.kind


def support_problem(sc: Any) -> tuple[str, str, str] | None:
    """(key, problem, fix) when a requested profiler or reset is not offered by the engine."""
    fam = engine_family(sc)  # which scenario kinds have a profiler window: their workload's
    if sc.engine.profile and fam not in PROFILERS:
        name = fam or "an endpoint of unknown family"
        fix = ("set engine.family=vllm|sglang|atom for an attached server"
               if fam is None else "set engine.profile=false, or use vLLM, SGLang or ATOM")
        return ("engine.profile", f"{name} serves no /start_profile and /stop_profile "
                "endpoints", fix)
    if sc.engine.reset_cache_before_point and fam not in CACHE_RESETS:
        return ("engine.reset_cache_before_point",
                f"{fam or 'an endpoint of unknown family'} offers no prefix-cache reset "
                "endpoint", "set engine.reset_cache_before_point=false, or use vLLM "
                "(/reset_prefix_cache) or SGLang (/flush_cache)")
    return None


def launch_env(sc: Any, trace_dir: Path) -> dict[str, str]:
    """The environment a launched engine needs for its profiler (empty when not profiling)."""
    fam = engine_family(sc)
    if not sc.engine.profile or fam not in PROFILERS:
        return {}
    return {PROFILERS[fam].trace_dir_env: str(trace_dir)}


def _post(base_url: str, path: str, headers: dict[str, str], body: Any = None,
          timeout: float = 600.0) -> str:
    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    data = json.dumps(body).encode() if body is not None else b""
    hdrs = {**headers, "Content-Type": "application/json"}
    req = urllib.request.Request(base_url + path, data=data, headers=hdrs, method="POST")
    with urllib.request.build_opener(_NoRedirect).open(req, timeout=timeout) as r:
        return r.read(65536).decode(errors="replace")


@dataclass
class PointProfiler:
    """One point's profiler calls; `facts()` is what the point records."""

    base_url: str
    family: str
    trace_dir: Path | None  # where the traces go, when we know (launched, or SGLang's body)
    headers: dict[str, str] = field(default_factory=dict)
    start_ts: float | None = None
    stop_ts: float | None = None
    stop_reply: str = ""
    error: str = ""
    _before: set[str] = field(default_factory=set)

    def start(self) -> None:
        ep = PROFILERS[self.family]
        body = None
        if ep.dir_in_body and self.trace_dir is not None:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            body = {"output_dir": str(self.trace_dir)}
        self._before = self._listing()
        try:
            _post(self.base_url, ep.start, self.headers, body)
        except OSError as e:
            self.error = f"start: {e}"
        self.start_ts = time.perf_counter()

    def stop(self) -> None:
        self.stop_ts = time.perf_counter()
        try:
            self.stop_reply = _post(self.base_url, PROFILERS[self.family].stop, self.headers)
        except OSError as e:
            self.error = (self.error + "; " if self.error else "") + f"stop: {e}"

    def _listing(self) -> set[str]:
        d = self.trace_dir
        return {str(p) for p in d.rglob("*") if p.is_file()} if d and d.is_dir() else set()

    def facts(self) -> dict[str, Any]:
        """The trace's directory and the files the stop added (an engine may still be writing
        them), the call times, and any failure (a failed call never fails the point)."""
        new = sorted(self._listing() - self._before)
        return {"profile_trace_dir": str(self.trace_dir) if self.trace_dir else None,
                "profile_traces": new or None,
                "profile_start_ts": self.start_ts, "profile_stop_ts": self.stop_ts,
                "profile_stop_reply": self.stop_reply[:2000] or None,
                "profile_error": self.error or None}


def reset_cache(base_url: str, family: str, headers: dict[str, str]) -> dict[str, Any]:
    """Empty the engine's prefix cache; what happened, for the point."""
    t = time.perf_counter()
    try:
        _post(base_url, CACHE_RESETS[family], headers, timeout=60)
        return {"cache_reset_ts": t, "cache_reset_error": None}
    except OSError as e:
        return {"cache_reset_ts": t, "cache_reset_error": str(e)}
