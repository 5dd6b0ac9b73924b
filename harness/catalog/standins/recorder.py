"""The recording stand-in: one program installed under every external command's name on the PATH
of an InferenceX script being captured (harness/catalog/standins/__init__.py builds that PATH).

It runs inside the capture sandbox with only the standard library (its shebang is the system
interpreter with -S). Each call writes one JSON record `<time_ns>-<pid>.json` into
$CAPTURE_RECORD_DIR: the name it was called by, its argv, cwd and environment, and the role it
played. Then it behaves just enough like the real command for the script to go on:

- an inference server (python3 -m sglang.launch_server / vllm serve / trtllm-serve under mpirun /
  python3 -m atom.entrypoints...) or a helper daemon (routers, mooncake_master) records the
  files its argv names and stays alive, as a background server does, so `kill -0 $SERVER_PID`
  in upstream's wait_for_ready (benchmarks/benchmark_lib.sh@843c6254) holds;
- the client (benchmark_serving.py, `aiperf profile`) records and writes $CAPTURE_RECORD_DIR/
  CLIENT_DONE: the capture has all it needs and the controller ends the sandbox;
- curl answers success (the health loop ends at once); sleep returns at once;
- installs (pip, uv) and downloads (hf) succeed without network; `uv venv DIR` makes DIR/bin
  with stand-ins in it, as install_agentic_deps checks for them;
- `sed -i` on a file outside /workspace, `patch` and `git apply` are recorded as patch steps
  and not applied (they edit the engine inside the image, which is not here);
- srun / docker run of `bash SCRIPT` (the runner launchers) record the dispatch and run the
  script with the environment srun --export / docker -e would give it;
- `bash SCRIPT` of a patch script of the checkout is recorded as one patch step and not run
  (bash below); any other bash call is the real bash;
- python3 -c / heredoc probes run on the real interpreter (they read files the script wrote).
"""

import itertools
import json
import os
import sys
import time

REC = os.environ.get("CAPTURE_RECORD_DIR", "/tmp")
BOUND = float(os.environ.get("CAPTURE_BOUND_S", "20"))
REAL_PY = os.environ.get("CAPTURE_REAL_PYTHON", "/usr/bin/python3")
WORKSPACE = "/workspace"
FILE_SUFFIXES = (".yml", ".yaml", ".json", ".jinja", ".toml", ".cfg", ".conf", ".txt", ".py")
SERVER_MODULE_PREFIXES = ("sglang.launch_server", "sglang.srt.entrypoints", "vllm.entrypoints",
                          "atom.entrypoints", "tensorrt_llm.serve")
HELPER_NAMES = ("vllm-router", "sglang-router", "mooncake_master", "lmcache_server",
                "dynamo", "nats-server", "etcd")
PORT_FLAGS = ("--port", "--server-port", "--http-port", "-p")
SMI = ("nvidia-smi", "amd-smi", "rocm-smi")


def record(role: str, argv: list[str], **extra: object) -> None:
    rec = {"name": os.path.basename(argv[0]), "argv": argv, "role": role, "cwd": os.getcwd(),
           "env": dict(os.environ), "pid": os.getpid(), "ppid": os.getppid(), **extra}
    path = os.path.join(REC, f"{time.time_ns():020d}-{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(rec, f)
    os.replace(path + ".tmp", path)


def referenced_files(argv: list[str]) -> dict[str, str]:
    """Files the server's argv names (`--extra_llm_api_options=x.yml`, `--config y.yaml`) or
    its environment points at (`MOONCAKE_CONFIG_PATH=/workspace/results/mooncake_config.json`,
    minimaxm3_fp8_h200_mtp.sh@843c6254), read at server start: the script wrote them
    (heredocs) just before."""
    out: dict[str, str] = {}
    env_paths = [v for v in os.environ.values() if os.path.isabs(v)]
    for tok in [*argv[1:], *env_paths]:
        for cand in (tok, tok.split("=", 1)[-1]):
            if not cand.endswith(FILE_SUFFIXES) or len(cand) > 4096:
                continue
            path = cand if os.path.isabs(cand) else os.path.join(os.getcwd(), cand)
            if os.path.isfile(path):
                try:
                    with open(path, errors="replace") as f:
                        out[os.path.normpath(path)] = f.read(262144)
                except OSError:
                    pass
    return out


def ports(argv: list[str]) -> list[str]:
    out = []
    for i, tok in enumerate(argv):
        name, eq, val = tok.partition("=")
        if name in PORT_FLAGS:
            v = val if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if v.isdigit():
                out.append(v)
    return out


def stay_alive(argv: list[str]) -> None:
    """A server or daemon: tell the health probes of its ports (fast.sh curl) it is up, then
    live until killed."""
    for p in ports(argv) or ["noport"]:
        open(os.path.join(REC, f"UP-{p}"), "a").close()
    end = time.monotonic() + BOUND
    while time.monotonic() < end:
        time.sleep(0.05)
    sys.exit(0)


def client_done(tool: str, argv: list[str]) -> None:
    record("client", argv, tool=tool)
    with open(os.path.join(REC, "CLIENT_DONE"), "w") as f:
        f.write(tool)
    sys.exit(0)


def python_role(argv: list[str]) -> str:
    args = argv[1:]
    while args and args[0] in ("-u", "-B", "-E", "-s", "-S", "-O", "-I"):
        args = args[1:]
    if not args or args[0] == "-":
        return "probe"
    if args[0] == "-c":
        return "probe"
    if args[0] == "-m" and len(args) > 1:
        mod = args[1]
        if mod in ("pip", "uv"):
            return "install"
        if "router" in mod:
            return "helper"
        if mod.startswith(SERVER_MODULE_PREFIXES):
            return "server"
        if mod.startswith(("aiperf",)):
            return "client-aiperf" if "profile" in args else "command"
        return "command"
    if os.path.basename(args[0]) == "benchmark_serving.py":
        return "client-bs"
    return "command"


def run_real_python(argv: list[str]) -> None:
    """A `python3 -c` / heredoc probe runs on the real interpreter: it reads files the script
    wrote or computes a value. One that fails on an import (`from mooncake.store import ...`:
    the image has the package, or the script just pip-installed it) answers success."""
    import subprocess

    record("probe", argv)
    done = subprocess.run([REAL_PY, *argv[1:]], stderr=subprocess.PIPE)
    err = done.stderr.decode(errors="replace")
    if done.returncode != 0 and ("ModuleNotFoundError" in err or "ImportError" in err):
        sys.exit(0)
    sys.stderr.write(err)
    sys.exit(done.returncode)


def make_venv(path: str) -> None:
    bindir = os.path.join(path, "bin")
    os.makedirs(bindir, exist_ok=True)
    me = os.path.realpath(__file__)
    for name in ("python", "python3", "aiperf", "hf", "pip"):
        link = os.path.join(bindir, name)
        if not os.path.lexists(link):
            os.symlink(me, link)


def fake_download(argv: list[str]) -> None:
    if "--local-dir" in argv:
        i = argv.index("--local-dir")
        if i + 1 < len(argv):
            d = argv[i + 1]
            os.makedirs(d, exist_ok=True)
            for name, body in (("config.json", "{}"), ("model.safetensors", "")):
                with open(os.path.join(d, name), "w") as f:
                    f.write(body)


def script_index(argv: list[str]) -> int | None:
    """Where the benchmark script is in a srun/docker argv: `... bash SCRIPT.sh ...`, or
    `docker run --entrypoint=/bin/bash ... IMAGE SCRIPT.sh` (runners/launch_rtx6000pro-lat.sh)."""
    bash_entry = any(a in ("--entrypoint=/bin/bash", "--entrypoint=bash") for a in argv) or any(
        a == "--entrypoint" and b in ("/bin/bash", "bash") for a, b in itertools.pairwise(argv))
    found = None
    for j in range(1, len(argv)):
        if argv[j].endswith(".sh") and (argv[j - 1] == "bash" or bash_entry):
            found = j
    return found


def dispatch(argv: list[str]) -> None:
    """srun/docker running a benchmark script: the launcher hands the job to its script. The
    script runs with the environment srun --export=ALL,K=V or docker -e/--env would give it,
    its output in $CAPTURE_RECORD_DIR/script.log (the capture's reason when it fails)."""
    i = script_index(argv)
    if i is None:
        record("command", argv)
        sys.exit(0)
    if os.path.basename(argv[0]) == "srun":
        # srun's job environment: the allocation salloc's stand-in granted
        env = {**os.environ, "SLURM_JOB_ID": "4242", "SLURM_JOBID": "4242"}
    else:
        env = docker_env(argv[:i])
    workdir = None
    for j, a in enumerate(argv[1:i], start=1):
        if a.startswith("--export="):
            for kv in a.split("=", 1)[1].split(",")[1:]:
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    env[k] = v
        if a.startswith(("--container-workdir=", "--workdir=")):
            workdir = a.split("=", 1)[1]
        if a in ("-w", "--workdir") and j + 1 < i:
            workdir = argv[j + 1]
    if workdir and os.path.isdir(workdir):
        os.chdir(workdir)
    record("dispatch", argv, script=argv[i], script_env=env)
    for k in ("PATH", "CAPTURE_RECORD_DIR", "CAPTURE_BOUND_S", "CAPTURE_REAL_PYTHON",
              "BASH_FUNC_command_not_found_handle%%", "PYTHONCOERCECLOCALE"):
        if k in os.environ:
            env[k] = os.environ[k]
    log = os.open(os.path.join(REC, "script.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.execve("/bin/bash", ["bash", *argv[i:]], env)


def docker_env(argv: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for j, a in enumerate(argv):
        if a in ("-e", "--env") and j + 1 < len(argv):
            kv = argv[j + 1]
        elif a.startswith("--env="):
            kv = a.split("=", 1)[1]
        else:
            continue
        if "=" in kv:
            k, v = kv.split("=", 1)
            env[k] = v
        elif kv in os.environ:
            env[kv] = os.environ[kv]
    return env


def sed(argv: list[str]) -> None:
    inplace = any(a == "-i" or (a.startswith("-i") and not a.startswith("-i=")) or
                  a.startswith("--in-place") for a in argv[1:])
    if inplace:
        targets = [a for a in argv[1:] if os.path.isabs(a) or os.path.exists(a)]
        outside = [t for t in targets if not os.path.abspath(t).startswith(WORKSPACE + "/")
                   and not os.path.abspath(t).startswith("/tmp/")]
        if outside or not targets:
            record("patch", argv)
            sys.exit(0)
    os.execv("/bin/sed", ["sed", *argv[1:]])


def bash(argv: list[str]) -> None:
    """`bash SCRIPT` where SCRIPT is a patch script of the checkout (its file name says "patch":
    benchmarks/single_node/agentic/apply_k3_container_patches.sh@843c6254, which
    kimik3_fp4_mi355x_mtp.sh runs before its server) edits the engine installed in the image:
    it resolves vLLM's and aiter's dist-packages and git-applies embedded diffs there, none of
    which is here. The call is one patch step, recorded with the script's absolute path (the
    setup steps have no cwd) and not run. Any other call execs the real bash with the
    environment unchanged, in its order."""
    script = argv[1] if len(argv) > 1 else ""
    if script and not script.startswith("-") and "patch" in os.path.basename(script) \
            and os.path.isfile(script):
        record("patch", ["bash", os.path.realpath(script), *argv[2:]])
        sys.exit(0)
    os.execv("/bin/bash", ["bash", *argv[1:]])


def python_main(argv: list[str]) -> None:
    role = python_role(argv)
    if role == "probe":
        run_real_python(argv)
    if role == "client-bs":
        client_done("benchmark_serving", argv)
    if role == "client-aiperf":
        client_done("aiperf", argv)
    if role in ("server", "helper"):
        record(role, argv, files=referenced_files(argv) if role == "server" else {})
        stay_alive(argv)
    if role == "install" and "--help" in argv:
        print("  --break-system-packages")
    record(role, argv)
    sys.exit(0)


def main() -> None:
    argv = sys.argv
    name = os.environ.pop("CAPTURE_AS", "") or os.path.basename(argv[0])
    argv = [name, *argv[1:]]
    if name == "_unknown":  # bash's command_not_found_handle: a command the image would have
        record("command", argv[1:], unknown=True)
        sys.exit(0)
    if name == "sleep":
        sys.exit(0)
    if name == "bash":
        bash(argv)
    if name in ("python", "python3") or name.startswith("python3."):
        python_main(argv)
    if name == "aiperf":
        if len(argv) > 1 and argv[1] == "profile":
            client_done("aiperf", argv)
        record("command", argv)
        sys.exit(0)
    if (name in ("vllm", "sglang") and len(argv) > 1 and argv[1] == "serve") or \
            name == "trtllm-serve" or \
            (name in ("mpirun", "torchrun") and any(
                os.path.basename(a) == "trtllm-serve" or a.startswith(SERVER_MODULE_PREFIXES)
                for a in argv)):
        record("server", argv, files=referenced_files(argv))
        stay_alive(argv)
    if name in HELPER_NAMES or (name == "lmcache" and len(argv) > 1 and argv[1] == "server"):
        record("helper", argv)
        stay_alive(argv)
    if name in ("pip", "pip3", "uv", "apt-get", "apt", "conda"):
        if name == "uv" and len(argv) > 2 and argv[1] == "venv":
            make_venv([a for a in argv[2:] if not a.startswith("-")][-1])
        record("install", argv)
        sys.exit(0)
    if name in ("hf", "huggingface-cli"):
        fake_download(argv)
        record("command", argv)
        sys.exit(0)
    if name == "patch" or (name == "git" and "apply" in argv):
        record("patch", argv)
        sys.exit(0)
    if name == "sed":
        sed(argv)
    if name in ("srun", "docker", "podman"):
        dispatch(argv)
    if name == "salloc":
        record("command", argv)
        print("salloc: Granted job allocation 4242", file=sys.stderr)
        sys.exit(0)
    if name == "curl":
        if "-o" in argv:
            target = argv[argv.index("-o") + 1]
            if target != "/dev/null":
                open(target, "a").close()
        record("probe" if any("localhost" in a or "0.0.0.0" in a or "127.0.0.1" in a
                              for a in argv) else "command", argv)
        sys.exit(0)
    record("probe" if name in SMI else "command", argv)
    sys.exit(0)


if __name__ == "__main__":
    main()
