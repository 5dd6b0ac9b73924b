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
- curl answers 200; sleep returns at once; installers (pip, apt-get, git) succeed unrun.
"""

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
                  "atom.entrypoints", "sglang.srt.entrypoints")
CLIENT_HINTS = ("benchmark_serving", "bench_serving", "aiperf", "lm_eval", "trace_replay")
# options of sbatch/srun/docker run that take a value as the next argument
SBATCH_VALUED = {"-N", "-n", "--nodes", "--ntasks", "--time", "-t", "--partition", "-p",
                 "--account", "-A", "--job-name", "-J", "--output", "-o", "--error", "-e",
                 "--nodelist", "-w", "--exclude", "-x", "--gres", "--ntasks-per-node"}
DOCKER_VALUED = {"-e", "--env", "-v", "--volume", "--name", "--entrypoint", "--device",
                 "--ulimit", "--network", "--ipc", "--group-add", "--cap-add",
                 "--security-opt", "--shm-size", "--stop-timeout", "-w", "--workdir", "-u",
                 "--user", "--env-file", "--gpus", "--runtime", "-p", "--publish"}


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


def srun(args):
    opts, rest = split_opts(args, SBATCH_VALUED)
    o = dict(opts)
    alloc = [x for x in os.environ.get("SLURM_JOB_NODELIST", "srtnode000").split(",") if x]
    if o.get("--nodelist") or o.get("-w"):
        nodes = (o.get("--nodelist") or o.get("-w")).split(",")
    else:
        nodes = alloc[:int(o.get("--nodes") or o.get("-N") or len(alloc))]
    record("srun", ["srun", *args], options=opts, nodes=nodes)
    procs = []
    for rank, node in enumerate(nodes):
        procs.append(subprocess.Popen(rest, env=dict(os.environ, **nodes_env(node, rank))))
    return max([p.wait() for p in procs] or [0])


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
    for k, v in opts:
        if k in ("-v", "--volume"):
            src, _, dst = v.partition(":")
            dst = dst.split(":", 1)[0]
            if dst and src != dst and not os.path.lexists(dst) and os.path.exists(src):
                os.makedirs(os.path.dirname(dst) or "/", exist_ok=True)
                os.symlink(src, dst)
    if ("--entrypoint", "") in opts or not cmd:
        pass
    return subprocess.run(cmd, env=env).returncode


def python(argv):
    args = argv[1:]
    mod = args[args.index("-m") + 1] if "-m" in args[:-1] else ""
    script = next((a for a in args if a.endswith(".py")), "")
    if mod.startswith(SERVER_MODULES):
        record("server", argv, module=mod)
        stay_up()
    if script.endswith("sync.py"):
        record("barrier", argv)
        return 0
    if any(h in mod or h in script for h in CLIENT_HINTS):
        record("client", argv)
        return 0
    os.execv(REAL_PY, [REAL_PY, *args])
    return 0


def stay_up():
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
    if name in ("mooncake_master", "atomesh"):
        record("server", argv, module=name)
        stay_up()
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
