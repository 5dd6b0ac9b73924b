"""The multi-node recording stand-in for upstream's own Slurm + Docker scripts (the AMD
`benchmarks/multi_node/amd_utils/` chain, harness/catalog/multinode_amd.py): one program under
the name of every command those scripts use to reach a cluster, a container or a GPU. It runs
in the capture sandbox (harness/catalog/sandbox.py) with only the standard library. Each call
writes one JSON record into $CAPTURE_RECORD_DIR; then it plays the command just enough:

- sbatch: the job script runs at once, here, as Slurm would run it on the allocation's first
  node (job 4242, nodes srtnode000.. as many as -N asks, its output to --output/--error);
- srun: the command runs once per node of the step (concurrently, as srun's tasks), with
  SLURM_PROCID and that node's name and address;
- scontrol show hostnames: the comma-separated list, one a line; squeue: no job left;
- docker run: recorded (image, -e environment, -v mounts, options), then the container's
  command runs with only the -e environment (as docker gives it), each mount's target made a
  link to its source; other docker calls (ps, rm, stop, pull) succeed with nothing to list;
- hostname / ip route get: the node's name, which is also its address (so every address in the
  captured text is a node name the importer turns into a placeholder); its interface
  `capturenic0`; ibv_devinfo: the HCAs rdma0..rdma7;
- python3 -m <server or router module>, mooncake_master: recorded, then stay up until killed
  (the scripts `kill -0` and later kill them); python3 sync.py (upstream's cross-node barrier)
  and the benchmark clients: recorded, succeed at once; any other python3 runs for real;
- curl answers 200; sleep returns at once; installers (pip, apt-get, git) succeed unrun;
- pyxis (llm-d's and TileRT's jobs): `srun --container-image=...` is recorded (image, mounts,
  the other --container-* flags, nodes) and its command runs per node with srun's environment
  (pyxis passes it on; --export=ALL,K=V adds to it), each --container-mounts target a link to
  its source, in --container-workdir; `salloc --no-shell` makes the allocation later
  `srun --jobid` and `squeue -o %A/%N` answer; `enroot import -o FILE docker://IMAGE` is
  recorded (which image a squash file holds) and writes FILE; `unsquashfs -l FILE` answers
  whether it exists;
- the other servers of those jobs (vllm serve, pd-sidecar, epp, envoy, TileRT's modules) are
  recorded and stay up listening on their ports, so bash's /dev/tcp probes find them (the
  chain runs in its own network namespace, node names resolving to its loopback); a
  python3 -c that asks the kernel for the node's source address (llm-d/server.sh) answers
  the node's name and interface;
- `python -m pip` is recorded, never run; with CAPTURE_IMAGE_PACKAGES set, the probes of the
  image a setup script makes (a package's version, `import pkg.mod`, a weight conversion) are
  answered as an image carrying those packages would (image_probe).
"""

import contextlib
import json
import os
import subprocess
import sys
import time

REC = os.environ.get("CAPTURE_RECORD_DIR", "/tmp")
REAL_PY = os.environ.get("CAPTURE_REAL_PYTHON", "/usr/bin/python3")
JOB_ID = "4242"
# the node's network interface, a name the importer recognises and leaves to the cluster
NIC = "capturenic0"
SERVER_MODULES = ("sglang.launch_server", "sglang_router.launch_router", "vllm.entrypoints",
                  "atom.entrypoints", "sglang.srt.entrypoints", "tilert.pd_vllm.decode_server",
                  "tilert.pd_vllm.pd_router")
SERVER_PROGRAMS = ("mooncake_master", "atomesh", "vllm", "pd-sidecar", "epp", "envoy")
PORT_FLAGS = ("--port", "--grpc-port", "--ctrl-port", "--http-port", "--grpc-health-port")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
# envoy's admin listener (benchmarks/llm-d/envoy.yaml@843c6254), which server.sh waits on
FIXED_PORTS = {"envoy": ("9901", "8080")}
CLIENT_HINTS = ("benchmark_serving", "bench_serving", "aiperf", "lm_eval", "trace_replay")
# options of sbatch/srun/docker run that take a value as the next argument
SBATCH_VALUED = {"-N", "-n", "--nodes", "--ntasks", "--time", "-t", "--partition", "-p",
                 "--account", "-A", "--job-name", "-J", "--output", "-o", "--error", "-e",
                 "--nodelist", "-w", "--exclude", "-x", "--gres", "--ntasks-per-node",
                 "--jobid", "--mem"}
DOCKER_VALUED = {"-e", "--env", "-v", "--volume", "--name", "--entrypoint", "--device",
                 "--ulimit", "--network", "--ipc", "--group-add", "--cap-add",
                 "--security-opt", "--shm-size", "--stop-timeout", "-w", "--workdir", "-u",
                 "--user", "--env-file", "--gpus", "--runtime", "-p", "--publish"}


def referenced_files(argv):
    """Config files a server's argv names (`--config-file=X`, `-c X`) and the files those
    name in turn (EPP's file-discovery `path:`), read when it starts: the job wrote them."""
    found, todo = {}, [a.split("=", 1)[-1] for a in argv[1:]]
    while todo:
        path = todo.pop()
        if path in found or not path.startswith("/") or not path.endswith(CONFIG_SUFFIXES) \
                or not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            found[path] = f.read(262144)
        todo += [m for m in found[path].split() if m.startswith("/")]
    return found


def record(role, argv, **extra):
    rec = {"name": os.path.basename(argv[0]), "argv": argv, "role": role, "cwd": os.getcwd(),
           "env": dict(os.environ), "node": os.environ.get("CAPTURE_NODE", "srtnode000"),
           "pid": os.getpid(), **extra}
    path = os.path.join(REC, f"{time.time_ns():020d}-{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(rec, f)
    os.replace(path + ".tmp", path)


def split_opts(args, valued):
    """(options as (name, value|None), the rest from the first non-option on)."""
    opts, i = [], 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-") or a == "--":
            break
        if "=" in a and a.startswith("--"):
            k, v = a.split("=", 1)
            opts.append((k, v))
        elif a in valued and i + 1 < len(args):
            opts.append((a, args[i + 1]))
            i += 1
        else:
            opts.append((a, None))
        i += 1
    return opts, args[i + (1 if i < len(args) and args[i] == "--" else 0):]


def nodes_env(node, rank):
    return {"CAPTURE_NODE": node, "SLURMD_NODENAME": node, "SLURM_PROCID": str(rank),
            "SLURM_NODEID": str(rank), "SLURM_LOCALID": "0"}


def sbatch(args):
    opts, rest = split_opts(args, SBATCH_VALUED)
    o = dict(opts)
    n = int(o.get("-N") or o.get("--nodes") or 1)
    nodes = [f"srtnode{i:03d}" for i in range(n)]
    record("sbatch", ["sbatch", *args], options=opts)
    env = dict(os.environ, SLURM_JOB_ID=JOB_ID, SLURM_JOBID=JOB_ID,
               SLURM_JOB_NODELIST=",".join(nodes), SLURM_NODELIST=",".join(nodes),
               SLURM_NNODES=str(n), SLURM_JOB_NUM_NODES=str(n), SLURM_SUBMIT_DIR=os.getcwd(),
               **nodes_env(nodes[0], 0))
    out = (o.get("--output") or o.get("-o") or os.devnull).replace("%j", JOB_ID)
    err = (o.get("--error") or o.get("-e") or os.devnull).replace("%j", JOB_ID)
    with open(out, "w") as fo, open(err, "w") as fe:
        subprocess.run(["bash", *rest], env=env, stdout=fo, stderr=fe,
                       stdin=subprocess.DEVNULL)
    print(JOB_ID)
    return 0


def allocation():
    """The nodes of the allocation `salloc` made (its record), else the job's."""
    path = os.path.join(REC, "ALLOCATION")
    if os.path.exists(path):
        with open(path) as f:
            return [x for x in f.read().split(",") if x]
    return [x for x in os.environ.get("SLURM_JOB_NODELIST", "srtnode000").split(",") if x]


def salloc(args):
    opts, _ = split_opts(args, SBATCH_VALUED)
    o = dict(opts)
    n = int(o.get("-N") or o.get("--nodes") or 1)
    nodes = [f"srtnode{i:03d}" for i in range(n)]
    with open(os.path.join(REC, "ALLOCATION"), "w") as f:
        f.write(",".join(nodes))
    record("salloc", ["salloc", *args], options=opts, nodes=nodes)
    print(f"salloc: Granted job allocation {JOB_ID}", file=sys.stderr)
    return 0


def squeue(args):
    fmt = args[args.index("-o") + 1] if "-o" in args[:-1] else ""
    if os.path.exists(os.path.join(REC, "ALLOCATION")):
        if fmt == "%A":
            print(JOB_ID)
        elif fmt == "%N":
            print(",".join(allocation()))
    return 0


def link_mounts(specs):
    """Each mount's target a link to its source, as the container would see it."""
    for spec in specs:
        src, _, dst = spec.partition(":")
        dst = dst.split(":", 1)[0]
        if dst and src != dst and not os.path.lexists(dst) and os.path.exists(src):
            os.makedirs(os.path.dirname(dst) or "/", exist_ok=True)
            with contextlib.suppress(FileExistsError):  # another node's task was first
                os.symlink(src, dst)


def export_env(value):
    """srun --export=ALL,K=V,...: the variables it adds (ALL keeps the environment)."""
    out = {}
    for item in (value or "").split(","):
        k, eq, v = item.partition("=")
        if eq:
            out[k] = v
    return out


def srun(args):
    opts, rest = split_opts(args, SBATCH_VALUED)
    o = dict(opts)
    alloc = allocation()
    if o.get("--nodelist") or o.get("-w"):
        nodes = (o.get("--nodelist") or o.get("-w")).split(",")
    else:
        nodes = alloc[:int(o.get("--nodes") or o.get("-N") or len(alloc))]
    image = o.get("--container-image")
    env = dict(os.environ, **export_env(o.get("--export")))
    record("pyxis" if image else "srun", ["srun", *args], options=opts, nodes=nodes,
           image=image, command=rest, container_env=env if image else None)
    cwd = None
    if image:
        link_mounts([m for m in (o.get("--container-mounts") or "").split(",") if m])
        cwd = o.get("--container-workdir")
    procs = []
    for rank, node in enumerate(nodes):
        procs.append(subprocess.Popen(rest, env=dict(env, **nodes_env(node, rank)), cwd=cwd))
    return max([p.wait() for p in procs] or [0])


def enroot(args):
    record("enroot", ["enroot", *args])
    if args[:1] == ["import"] and "-o" in args[:-1]:
        with open(args[args.index("-o") + 1], "w") as f:
            f.write(args[-1])  # the image the squash file holds
    return 0


def docker(args):
    if not args or args[0] != "run":
        record("docker", ["docker", *args])
        return 0
    opts, rest = split_opts(args[1:], DOCKER_VALUED)
    image, cmd = rest[0], rest[1:]
    env = {k: v for k, v in os.environ.items() if k.startswith("CAPTURE_")}
    env.update(PATH=os.environ["PATH"], HOME="/root", HOSTNAME=os.environ.get("CAPTURE_NODE", ""))
    for k, v in opts:
        if k in ("-e", "--env"):
            name, eq, val = v.partition("=")
            if eq:
                env[name] = val
            elif name in os.environ:
                env[name] = os.environ[name]
    record("docker-run", ["docker", *args], image=image, options=opts,
           container_env=env, command=cmd)
    if ("-d", None) in opts or ("--detach", None) in opts:
        return 0
    link_mounts([v for k, v in opts if k in ("-v", "--volume")])
    if ("--entrypoint", "") in opts or not cmd:
        pass
    return subprocess.run(cmd, env=env).returncode


def python(argv):
    args = argv[1:]
    mod = args[args.index("-m") + 1] if "-m" in args[:-1] else ""
    script = next((a for a in args if a.endswith(".py")), "")
    if mod.startswith(SERVER_MODULES):
        record("server", argv, module=mod)
        stay_up(listen_ports(argv))
    code = args[args.index("-c") + 1] if "-c" in args[:-1] else ""
    if "getsockname" in code and "1.1.1.1" in code:  # the node's address and interface
        print(os.environ.get("CAPTURE_NODE", "srtnode000"), NIC)
        return 0
    if script.endswith("sync.py"):
        record("barrier", argv)
        return 0
    if any(h in mod or h in script for h in CLIENT_HINTS):
        record("client", argv)
        return 0
    if mod in ("pip", "uv"):  # an install into the image: recorded, never run here
        record("install", argv)
        return 0
    image = json.loads(os.environ.get("CAPTURE_IMAGE_PACKAGES") or "{}")
    if image:
        answered = image_probe(args, mod, code, image)
        if answered is not None:
            return answered
    os.execv(REAL_PY, [REAL_PY, *args])
    return 0


def image_probe(args, mod, code, image):
    """What the image answers that this host cannot (CAPTURE_IMAGE_PACKAGES, {distribution:
    version} of the packages upstream's setup script requires of it): a version probe on
    stdin (`$PY - NAME <<'PY' ... importlib.metadata.version`), `-c "import pkg.mod"` of one
    of them, and a one-time weight conversion `-m pkg.mod ... --save_dir D` (recorded; D gets
    the index.json the script checks for). None: not such a probe, run it for real."""
    if args[:1] == ["-"]:
        text = sys.stdin.read()
        if "importlib.metadata" in text and len(args) > 1:
            if args[1] in image:
                print(image[args[1]])
            return 0
        return subprocess.run([REAL_PY, "-c", text, *args[1:]]).returncode
    top = code.replace("import ", "", 1).strip().split(".")[0] if code.startswith("import ") \
        else ""
    if top and top in image:
        return 0
    if mod.split(".")[0] in image and "--save_dir" in args:
        record("setup", [os.path.basename(sys.argv[0]), *args], module=mod)
        out = args[args.index("--save_dir") + 1]
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            f.write("{}")
        return 0
    return None


def listen_ports(argv, name=""):
    ports = list(FIXED_PORTS.get(name, ()))
    for i, a in enumerate(argv):
        k, eq, v = a.partition("=")
        if k in PORT_FLAGS:
            ports.append(v if eq else (argv[i + 1] if i + 1 < len(argv) else ""))
    return [p for p in ports if p.isdigit()]


def stay_up(ports=()):
    import socket

    held = []
    # only where the chain runs in its own network namespace (CAPTURE_LISTEN, set by
    # harness/catalog/multinode_pyxis.py): bash's /dev/tcp probes find the servers there
    for p in ports if os.environ.get("CAPTURE_LISTEN") == "1" else ():
        try:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0", int(p)))
            sock.listen(16)
            held.append(sock)
        except OSError:
            pass  # another node's server holds it: the probe finds that one
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    sys.exit(0)


def main():
    argv = sys.argv
    name = os.path.basename(argv[0])
    node = os.environ.get("CAPTURE_NODE", "srtnode000")
    if name == "sleep":
        return 0
    if name == "sbatch":
        return sbatch(argv[1:])
    if name == "srun":
        return srun(argv[1:])
    if name == "docker":
        return docker(argv[1:])
    if name in ("python", "python3"):
        return python(argv)
    if name == "scontrol":
        if argv[1:3] == ["show", "hostnames"]:
            print("\n".join(x for x in (argv[3] if len(argv) > 3 else "").split(",") if x))
        return 0
    if name == "hostname":
        print(node)
        return 0
    if name == "ip":
        if "get" in argv:
            print(f"1.1.1.1 via 10.0.0.254 dev {NIC} src {node} uid 0")
        else:
            print(f"default via 10.0.0.254 dev {NIC} proto static")
        return 0
    if name == "ibv_devinfo":
        # the HCA names upstream's launcher gives this cluster (launch_mi355x-amds.sh@843c6254
        # IBDEVICES), which env.sh otherwise detects in the container with ibv_devinfo
        for i in range(8):
            print(f"hca_id:\trdma{i}")
        return 0
    if name in SERVER_PROGRAMS:
        record("server", argv, module=name, files=referenced_files(argv))
        stay_up(listen_ports(argv, name))
    if name == "salloc":
        return salloc(argv[1:])
    if name == "squeue":
        return squeue(argv[1:])
    if name == "enroot":
        return enroot(argv[1:])
    if name == "unsquashfs":
        return 0 if os.path.exists(argv[-1]) else 1
    if name == "curl":
        if "-w" in argv:
            sys.stdout.write("200")
        return 0
    if name == "sudo":
        os.execvp(argv[1], argv[1:])
    record(name, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
