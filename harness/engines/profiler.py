"""The engine's own profiler around a point's measured window, and its prefix-cache reset
before a point (`engine.profile`, `engine.reset_cache_before_point`; docs/slo.md).

What each server offers, from its source (each adapter class declares it: `profiler`,
`cache_reset`):
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

from harness.client.plain_http import open_no_redirect


@dataclass(frozen=True, slots=True)
class ProfilerEndpoints:
    start: str
    stop: str
    trace_dir_env: str
    dir_in_body: bool = False  # SGLang takes the output directory with the start call


def _adapter(family: str | None) -> Any:
    from harness.engines.registry import adapter_class, engine_kinds

    return adapter_class(family) if family in engine_kinds() else None


def endpoints_of(family: str | None) -> ProfilerEndpoints | None:
    """The profiler routes the engine family's adapter declares, or None."""
    return getattr(_adapter(family), "profiler", None)


def reset_path_of(family: str | None) -> str | None:
    """The prefix-cache reset route the engine family's adapter declares, or None."""
    return getattr(_adapter(family), "cache_reset", None)


def _offering(attribute: str) -> str:
    from harness.engines.registry import adapter_class, engine_kinds

    return ", ".join(k for k in engine_kinds() if getattr(adapter_class(k), attribute, None))


def engine_family(sc: Any) -> str | None:
    """The engine behind the point: the adapter kind, or an endpoint's declared family."""
    adapter = _adapter(sc.engine.kind)
    return adapter.family(sc) if adapter is not None else None


def support_problem(sc: Any) -> tuple[str, str, str] | None:
    """(key, problem, fix) when a requested profiler or reset is not offered by the engine
    (which scenario kinds have a profiler window is their workload class's to say)."""
    fam = engine_family(sc)
    if sc.engine.profile and endpoints_of(fam) is None:
        name = fam or "an endpoint of unknown family"
        fix = (f"set engine.family={'|'.join(_offering('profiler').split(', '))} for an "
               "attached server" if fam is None
               else f"set engine.profile=false, or use one of {_offering('profiler')}")
        return ("engine.profile", f"{name} serves no /start_profile and /stop_profile "
                "endpoints", fix)
    if sc.engine.reset_cache_before_point and reset_path_of(fam) is None:
        return ("engine.reset_cache_before_point",
                f"{fam or 'an endpoint of unknown family'} offers no prefix-cache reset "
                "endpoint", "set engine.reset_cache_before_point=false, or use one of "
                f"{_offering('cache_reset')}")
    return None


def launch_env(sc: Any, trace_dir: Path) -> dict[str, str]:
    """The environment a launched engine needs for its profiler (empty when not profiling)."""
    ep = endpoints_of(engine_family(sc))
    if not sc.engine.profile or ep is None:
        return {}
    return {ep.trace_dir_env: str(trace_dir)}


def _post(base_url: str, path: str, headers: dict[str, str], body: Any = None,
          timeout: float = 600.0) -> str:
    data = json.dumps(body).encode() if body is not None else b""
    hdrs = {**headers, "Content-Type": "application/json"}
    req = urllib.request.Request(base_url + path, data=data, headers=hdrs, method="POST")
    with open_no_redirect(req, timeout=timeout) as r:
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
        ep = self.endpoints
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
            self.stop_reply = _post(self.base_url, self.endpoints.stop, self.headers)
        except OSError as e:
            self.error = (self.error + "; " if self.error else "") + f"stop: {e}"

    @property
    def endpoints(self) -> ProfilerEndpoints:
        ep = endpoints_of(self.family)
        assert ep is not None, "support_problem refuses a profile of this family before launch"
        return ep

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
        _post(base_url, str(reset_path_of(family)), headers, timeout=60)
        return {"cache_reset_ts": t, "cache_reset_error": None}
    except OSError as e:
        return {"cache_reset_ts": t, "cache_reset_error": str(e)}
