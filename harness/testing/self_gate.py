"""The project gates itself: a small, deterministic performance check through `harness gate`.

The target is the scripted server (sleep-scheduled TTFT and inter-token delays, the embedded
model's tokenizer for prompt counts), so throughput and latency depend on the harness alone:
a change that slows the client or breaks the metrics moves them. Three repeats per point, so
the gate uses its significance test.

    make gate       (python -m harness.testing.self_gate)                  run and gate
    make baseline   (python -m harness.testing.self_gate --save-baseline)  refresh the baseline
Exit codes are the gate's: 0 pass, 1 regression, 2 invalid input.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from harness.config.locations import repo_root
from harness.engines.weights import cache_dir
from harness.testing.spawn import spawn_server

BASELINE = repo_root() / "results" / "baselines" / "scripted"
SERVER_ARGS = ("--ttft-ms", "25", "--itl-ms", "8", "--tokens-per-chunk", "1", "2")
# The scripted server and the client share this machine's two cores, and a 2-vCPU VM now and
# then deschedules the client for several ms (a CI run saw a 5.9 ms p99 stamp-error estimate
# at concurrency 4). The check gates throughput and median interactivity and TTFT, which a p99
# stamp delay of a few ms cannot move (p50 stamp error is ~0.3 ms), so its validity bound on
# that estimate is 20 ms rather than the default 1 ms. For the same reason a lone stall may move
# p99 E2EL as far as it likes (a full make test saw one of 29.9 ms at concurrency 4 invalidate
# a candidate whose every gated figure was within 2.5%): client.max_stall_share=1. Failures
# and the rest still invalidate.
SWEEP_ARGS = ("concurrency=[1,4,8]", "repeats=3", "scenario.requests_per_conc=4",
              "scenario.warmup_per_conc=1", "client.max_stamp_err_ms=20",
              "client.max_stall_share=1")


def tokenizer_file() -> Path:
    path = cache_dir() / "tokenizers" / "smollm2-135m" / "tokenizer.json"
    if not path.is_file():  # converted from the GGUF on first use
        from harness.config.compose import compose_sweep
        from harness.workloads.tokenizer import load_tokenizer

        load_tokenizer(compose_sweep([]).model)
    return path


def run_check(out: Path, slowdown: float = 1.0, fail_every: int = 0) -> Path:
    """One deterministic sweep against the scripted server; returns its run directory."""
    shutil.rmtree(out, ignore_errors=True)
    extra = ["--slowdown", str(slowdown), "--tokenizer", str(tokenizer_file())]
    if fail_every:
        extra += ["--fail-every", str(fail_every)]
    with spawn_server("harness.testing.scripted_server", *SERVER_ARGS, *extra) as port:
        r = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", "sweep", "engine=endpoint",
             f"engine.url=http://127.0.0.1:{port}", *SWEEP_ARGS,
             f"results_dir={out.parent}", f"run_id={out.name}"],
            capture_output=True, text=True, timeout=900,
        )
    if r.returncode != 0:
        raise RuntimeError(f"the check sweep failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--save-baseline", action="store_true")
    p.add_argument("--out", type=Path, default=repo_root() / "results" / "self-gate")
    p.add_argument("--markdown", type=Path, default=None)
    a = p.parse_args()
    run = run_check(a.out)
    cli = [sys.executable, "-m", "harness.cli.main"]
    if a.save_baseline:
        return subprocess.call([*cli, "baseline", str(run), "--to", str(BASELINE)])
    cmd = [*cli, "gate", "--baseline", str(BASELINE), "--candidate", str(run)]
    if a.markdown:
        cmd += ["--markdown", str(a.markdown)]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
