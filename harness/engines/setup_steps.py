"""Setup steps (engine.setup: InferenceX scripts' job-time `pip install`s and in-container
patches) run inside the image, in order, before the server, in the same container.

Chosen form: the container's entrypoint argv is `python3 -c RUNNER STEPS_JSON SERVER_ARGV...`.
RUNNER is the fixed program below (never built from config); it runs each step's argv with
subprocess (no shell), stops on the first that fails (its exit code is the container's), then
execs the server in place, so the server is the container's main process and its signals and
exit code are the launch's. Works the same under `docker run` and pyxis' srun."""

from __future__ import annotations

import json

from harness.config.schema import SetupStep

RUNNER = (
    "import json, os, subprocess, sys\n"
    "steps = json.loads(sys.argv[1])\n"
    "for i, argv in enumerate(steps):\n"
    "    print(f'# setup step {i + 1}/{len(steps)}: {argv}', flush=True)\n"
    "    rc = subprocess.call(argv)\n"
    "    if rc:\n"
    "        print(f'# setup step {i + 1} failed with exit code {rc}', flush=True)\n"
    "        sys.exit(rc)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def with_setup(steps: list[SetupStep], server_argv: list[str],
               python: str = "python3") -> list[str]:
    """The entrypoint argv that runs the steps, then the server."""
    if not steps:
        return list(server_argv)
    return [python, "-c", RUNNER, json.dumps([list(s.argv) for s in steps]), *server_argv]


def split_setup(argv: list[str]) -> tuple[list[list[str]], list[str]]:
    """The steps and the server argv back from an entrypoint `with_setup` built (show/diff)."""
    if len(argv) > 3 and argv[1] == "-c" and argv[2] == RUNNER:
        return json.loads(argv[3]), argv[4:]
    return [], list(argv)
