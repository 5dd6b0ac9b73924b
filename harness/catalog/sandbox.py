"""Run one bash command of an InferenceX checkout in a throw-away copy of this machine: an
overlay of / (every write lands in a temp dir), the checkout overlaid at /workspace (where the
runner launchers mount it in the container), private mount and PID namespaces (killing the
sandbox ends every process it started, background servers included) and a clean environment.
Nothing the script writes, installs or patches reaches the real filesystem. /tmp is a fresh
tmpfs: what the host left there (upstream's own `run_aiperf` makes /tmp/aiperf-venv) must not
change what a script does; only the sandbox's records and the stand-in PATH (`keep`) are bound
into it. The sandbox also plays a GPU node's host for the probes scripts make (_fake_host)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SETUP = r"""set -e
B="$CAPTURE_SANDBOX"
mount -t overlay overlay -o "lowerdir=/,upperdir=$B/u,workdir=$B/w" "$B/m"
mount --rbind /dev "$B/m/dev"
mount -t tmpfs -o size=4T tmpfs "$B/m/dev/shm"
mount -t proc proc "$B/m/proc"
mkdir -p "$B/m/workspace"
mount -t overlay overlay \
  -o "lowerdir=$CAPTURE_CHECKOUT,upperdir=$B/wu,workdir=$B/ww" "$B/m/workspace"
mount -t tmpfs -o size=64G tmpfs "$B/m/tmp"
for d in "$B/rec" $CAPTURE_KEEP; do
  mkdir -p "$B/m$d" && mount --bind "$d" "$B/m$d"
done
exec chroot "$B/m" "$@"
"""


@dataclass(frozen=True)
class SandboxRun:
    records: Path  # the directory the stand-ins wrote their records to
    finished_by: str  # "client" (CLIENT_DONE seen), "exit" (bash ended) or "timeout"
    exit_code: int | None
    output: str  # the tail of the command's stdout+stderr


class Sandbox:
    """A temp directory holding one run's overlay layers, stand-in PATH and records."""

    def __init__(self, checkout: Path, keep: tuple[Path, ...] = ()) -> None:
        self.checkout = checkout.resolve()
        self.keep = tuple(p.resolve() for p in keep)  # host directories the sandbox must see
        self.base = Path(tempfile.mkdtemp(prefix="ix-capture-"))
        for d in ("u", "w", "m", "wu", "ww", "rec"):
            (self.base / d).mkdir()
        self._fake_host(self.base / "u")

    @staticmethod
    def _fake_host(upper: Path) -> None:
        """What a GPU node answers to the host probes scripts make before the server: one
        active RDMA rail (kimik3 mooncake scripts grep /sys/class/infiniband/*/ports/1/state);
        /dev/shm is a 4 TiB tmpfs (the LMCache scripts size their L1 against its free space).
        The GPU tools' answers are in standins/fast.sh (rocm-smi: idle GPUs, MEC firmware 177,
        so the scripts' HSA_NO_SCRATCH_RECLAIM workaround for older firmware is not taken)."""
        state = upper / "sys/class/infiniband/mlx5_0/ports/1/state"
        state.parent.mkdir(parents=True)
        state.write_text("4: ACTIVE\n")

    def run(self, command: str, env: dict[str, str], bound_s: float) -> SandboxRun:
        argv = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()),
                "/bin/bash", "-c", f"cd /workspace && {command}"]
        unshare = ["unshare", "-m", "-p", "-f", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare.insert(1, "-r")
        host_env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "CAPTURE_SANDBOX": str(self.base),
                    "CAPTURE_CHECKOUT": str(self.checkout),
                    "CAPTURE_KEEP": " ".join(str(p) for p in self.keep)}
        log = self.base / "output.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([*unshare, "sh", "-c", SETUP, "sh", *argv], env=host_env,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            finished_by, code = self._wait(proc, bound_s)
        text = log.read_text(errors="replace")
        return SandboxRun(self.base / "rec", finished_by, code, text[-4000:])

    def _wait(self, proc: subprocess.Popen, bound_s: float) -> tuple[str, int | None]:
        done = self.base / "rec" / "CLIENT_DONE"
        end = time.monotonic() + bound_s
        finished_by, code = "timeout", None
        while time.monotonic() < end:
            if done.exists():
                finished_by = "client"
                break
            code = proc.poll()
            if code is not None:
                finished_by = "exit"
                break
            time.sleep(0.02)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return finished_by, code

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)
