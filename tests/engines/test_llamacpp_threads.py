"""How the embedded engine's threads wait (recipes/engine/llamacpp.yaml): the wheel's ggml is
built with OpenMP, so its barriers are libgomp's and OMP_WAIT_POLICY says whether a thread
spins there or sleeps; the recipe's choice reaches the real server process. llama.cpp's own
polling flags map onto its parameters."""

from __future__ import annotations

import contextlib
import time
import urllib.request
from pathlib import Path

from harness.config.compose import compose_sweep
from harness.engines.llamacpp import LlamaCppAdapter, llama_params
from harness.engines.process import ServerProcess, free_port


def test_poll_flags_map_onto_llamacpps_cpu_params() -> None:
    assert llama_params(["--poll", "0", "--poll-batch=0"]) == {
        "cpuparams.poll": 0, "cpuparams_batch.poll": 0}


def test_the_recipes_wait_policy_reaches_the_server_process(tmp_path: Path) -> None:
    import xllamacpp

    lib = Path(xllamacpp.__file__).parent / "xllamacpp.abi3.so"
    maps_openmp = b"omp_get_num_threads" in lib.read_bytes()
    sc = compose_sweep(["+engine.env.OMP_WAIT_POLICY=PASSIVE"])  # the opt-in (the recipe)
    assert sc.engine.env.get("OMP_WAIT_POLICY") == "PASSIVE"
    assert maps_openmp, "the wheel no longer uses OpenMP: revisit engine.env in the recipe"
    plan = LlamaCppAdapter(sc).launch_plan(free_port(), 1)
    assert plan.env["OMP_WAIT_POLICY"] == "PASSIVE"
    with ServerProcess(plan, tmp_path / "w", tmp_path / "engine.log") as srv:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), \
                    urllib.request.urlopen(srv.base_url + "/health", timeout=2):
                break
            time.sleep(0.3)
        assert srv.proc is not None
        environ = Path(f"/proc/{srv.proc.pid}/environ").read_bytes().split(b"\0")
        assert b"OMP_WAIT_POLICY=PASSIVE" in environ
