"""The PATH a captured InferenceX script runs with: recording stand-ins (recorder.py) under the
name of every external command that would touch a GPU, the network, an installed package or a
scheduler, and links to a fixed list of real text and file tools (the script's own logic: cat,
sed, awk, seq, ...). Any other command falls to bash's `command_not_found_handle`, which records
it too, so nothing the script calls goes unrecorded and nothing outside the list runs."""

from __future__ import annotations

import shutil
from pathlib import Path

RECORDER = Path(__file__).with_name("recorder.py")
FAST = Path(__file__).with_name("fast.sh")
SED = Path(__file__).with_name("sed.sh")

# Commands whose real program must never run during a capture: engines, clients, installers,
# downloads, GPU tools, schedulers, containers, routers and daemons.
# Those that need logic run recorder.py (a Python start per call); the rest the sh recorder.
STANDINS: tuple[str, ...] = (
    "python", "python3", "python3.10", "python3.11", "python3.12", "vllm", "sglang",
    "trtllm-serve", "mpirun", "torchrun", "aiperf", "uv", "git", "srun", "docker", "podman",
    "vllm-router", "sglang-router", "mooncake_master", "lmcache_server", "lmcache",
    "nats-server", "etcd",
    # the real bash, except `bash <patch script>` (recorder.py bash): Python execs it with the
    # environment as it came (a shell would reorder it, and dash drops the exported
    # BASH_FUNC_command_not_found_handle%%, not a valid sh name)
    "bash",
)
FAST_STANDINS: tuple[str, ...] = (
    "hf", "huggingface-cli", "pip", "pip3", "apt-get", "apt", "conda", "curl", "wget", "sleep",
    "patch", "salloc", "sbatch", "squeue", "scancel", "scontrol", "sinfo", "enroot",
    "unsquashfs", "sudo", "nvidia-smi", "amd-smi", "rocm-smi", "ibv_devinfo", "ibstat",
    "ibv_devices", "lspci", "numactl", "nvcc", "ldconfig", "modprobe", "dmesg", "free", "lscpu",
    "_unknown",
)

# Real tools a script's own logic uses. `nohup`, `timeout`, `setsid` and `env` exec the
# command after them through PATH, so the stand-ins still catch what they start.
REAL_TOOLS: tuple[str, ...] = (
    "bash", "sh", "dash", "cat", "cp", "mv", "rm", "mkdir", "rmdir", "ls", "ln", "touch",
    "chmod", "chown", "head", "tail", "tee", "grep", "egrep", "fgrep", "awk", "gawk", "mawk",
    "cut", "tr", "wc", "sort", "uniq", "seq", "dirname", "basename", "realpath", "readlink",
    "date", "env", "printf", "echo", "test", "[", "expr", "true", "false", "xargs", "find",
    "stat", "id", "whoami", "uname", "hostname", "nproc", "mktemp", "sync", "tac", "rev",
    "paste", "comm", "diff", "cmp", "od", "base64", "sha256sum", "md5sum", "numfmt", "timeout",
    "nohup", "kill", "ps", "pgrep", "pkill", "which", "getconf", "du", "df", "fold", "getent",
    "setsid", "flock", "bc", "jq", "yes", "split", "join", "tsort", "sum", "cksum", "install",
    "pwd", "sha1sum", "column", "perl", "gzip", "tar", "zcat", "tput",
)


def build_path_dir(bindir: Path, vendor: str) -> Path:
    """Fill `bindir` with the stand-ins and real tools; `vendor` ("nvidia"/"amd") keeps only
    that vendor's GPU tools, as upstream's start_gpu_monitor picks the tool it finds first."""
    bindir.mkdir(parents=True, exist_ok=True)
    rec = bindir / "_recorder"
    rec.write_text("#!/usr/bin/python3 -S\n" + RECORDER.read_text())
    rec.chmod(0o755)
    for src, name in ((FAST, "_fast"), (SED, "sed")):
        (bindir / name).write_text(src.read_text())
        (bindir / name).chmod(0o755)
    other = ("amd-smi", "rocm-smi") if vendor == "nvidia" else ("nvidia-smi",)
    for name in STANDINS:
        (bindir / name).symlink_to("_recorder")
    for name in FAST_STANDINS:
        if name not in other:
            (bindir / name).symlink_to("_fast")
    for name in REAL_TOOLS:
        real = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
        if real and not (bindir / name).exists():
            (bindir / name).symlink_to(real)
    return bindir


def not_found_handler(bindir: Path) -> dict[str, str]:
    """bash's hook for a command on no PATH entry, exported as a function through the
    environment: it records the command (role "command", unknown) and answers success."""
    return {"BASH_FUNC_command_not_found_handle%%":
            f'() {{ "{bindir}/_unknown" "$@"; }}'}


def plumbing_keys() -> tuple[str, ...]:
    """Environment entries the capture adds, removed from every recorded environment."""
    return ("PATH", "CAPTURE_RECORD_DIR", "CAPTURE_BOUND_S", "CAPTURE_REAL_PYTHON",
            "BASH_FUNC_command_not_found_handle%%", "PWD", "SHLVL", "_", "OLDPWD",
            "PYTHONCOERCECLOCALE")


__all__ = [
    "FAST_STANDINS",
    "REAL_TOOLS",
    "RECORDER",
    "STANDINS",
    "build_path_dir",
    "not_found_handler",
    "plumbing_keys",
]
