"""Child process that runs llama.cpp's HTTP server from the `xllamacpp` wheel.

xllamacpp has no command-line tool: the server runs on a thread of this process, which stays
alive until SIGTERM/SIGINT (or the harness dies: PR_SET_PDEATHSIG is set by the launcher).
Parameters come as one JSON argument built by `harness.engines.llamacpp`, never a shell string.

    python -m harness.engines.llamacpp_server '{"model_path": ..., "port": 8080, ...}'
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from typing import Any


def build_params(cfg: dict[str, Any]) -> Any:
    import xllamacpp as x

    p = x.CommonParams()
    p.model.path = cfg["model_path"]
    p.model_alias = [cfg["alias"]]  # a list: a plain string is split into characters
    p.hostnames = [cfg.get("host") or "127.0.0.1"]
    p.port = int(cfg["port"])
    p.n_parallel = int(cfg["n_parallel"])
    p.n_ctx = int(cfg["n_ctx"])  # shared by all slots
    p.cont_batching = True
    p.endpoint_metrics = True
    p.endpoint_slots = True
    if cfg.get("threads"):
        p.cpuparams.n_threads = int(cfg["threads"])
        p.cpuparams_batch.n_threads = int(cfg["threads"])
    for path, value in (cfg.get("params") or {}).items():  # engine.extra_args, mapped
        *parents, name = path.split(".")
        target = p
        for part in parents:
            target = getattr(target, part)
        setattr(target, name, value)
    spec = cfg.get("speculative") or {}
    method = spec.get("method", "none")
    if method == "ngram":
        p.speculative.types = [x.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        # This llama.cpp drafts nothing (or stalls) when the looked-up n-gram is longer than
        # the draft: keep size_n <= size_m.
        p.speculative.ngram_simple.size_n = min(int(spec.get("ngram_min", 2)), int(spec["k"]))
        p.speculative.ngram_simple.size_m = int(spec["k"])
        p.speculative.draft.n_max = int(spec["k"])
    elif method == "draft_model":
        p.speculative.types = [x.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        p.speculative.draft.mparams.path = spec["draft_path"]
        p.speculative.draft.n_max = int(spec["k"])
        p.speculative.draft.n_min = 0
    if spec.get("synthetic_rates"):
        p.speculative.synth_rates = [float(r) for r in spec["synthetic_rates"]]
    return p


# How long a stop may take. xllamacpp's Server destructor waits for its HTTP handler threads,
# holding the GIL, and one streaming a reply whose client has gone kept it ~15 s (measured:
# `harness calibrate` SIGTERMed with a request in flight took 18 s to exit, the launcher's
# 15 s grace nearly spent).
STOP_GRACE_S = 2.0


def stop(server: list[Any], grace_s: float = STOP_GRACE_S) -> None:
    """Stop the server, orderly if that takes at most `grace_s`, else exit regardless:
    faulthandler's watchdog is a C thread, so it fires while the destructor holds the GIL."""
    with open(os.devnull, "w") as sink:
        faulthandler.dump_traceback_later(grace_s, exit=True, file=sink)
        server.clear()  # the last reference: the destructor stops the server
        faulthandler.cancel_dump_traceback_later()


def main(argv: list[str]) -> int:
    import xllamacpp as x

    cfg = json.loads(argv[0])
    params = build_params(cfg)
    server = [x.Server(params)]  # starts serving on a background thread
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    stop(server)
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    sys.exit(main(sys.argv[1:]))
