"""Multi-node keys that upstream deploys with its own Slurm + Docker scripts (the AMD MI355X
disaggregated keys), captured by running those scripts: the workflow's launch step
(`bash ./runners/launch_${RUNNER_NAME%%_*}.sh`, .github/workflows/benchmark-multinode-tmpl.yml
@843c6254) with the row's environment, in the import sandbox (harness/catalog/sandbox.py) with
the Slurm/Docker recording stand-in (harness/catalog/standins/slurm_docker.py). The chain runs
as upstream wrote it: runners/launch_mi355x-amds.sh -> benchmarks/multi_node/<model>_<precision>
_mi355x_<framework>.sh -> amd_utils/submit.sh (sbatch) -> amd_utils/job.slurm (srun over every
node, `docker run` of the image) -> amd_utils/server.sh -> server_sglang.sh (or server_atom.sh),
which starts each node's prefill or decode server and, on node 0, the router. What the servers
and the router were started with becomes the row's `deployment:` through the same role builder
as the srt-slurm capture (harness/catalog/multinode_roles.py), and the docs say what differs
(docs/multinode.md, "AMD keys")."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.catalog.container_capture import docker_options, same_on_every_node
from harness.catalog.multinode_roles import deployment
from harness.catalog.multinode_template import NotCaptured
from harness.catalog.sandbox import Sandbox

STANDIN = Path(__file__).with_name("standins") / "slurm_docker.py"
STANDIN_NAMES = ("sbatch", "srun", "scontrol", "squeue", "scancel", "docker", "hostname", "ip",
                 "python", "python3", "mooncake_master", "curl", "sudo", "pip", "pip3",
                 "apt-get", "git", "ibv_devinfo", "rocm-smi", "amd-smi", "nicctl", "sleep",
                 "huggingface-cli", "hf", "wget")
FRAMEWORKS = ("sglang-disagg", "atom-disagg", "vllm-disagg")
PYXIS_FRAMEWORKS = ("llmd-vllm", "tilert")  # their chains start pyxis containers
CHAIN_DIRS = {"llmd-vllm": "llm-d/", "tilert": "tilert_utils/"}
# Knobs of upstream's own that skip a host check with nothing to check here (job.slurm@843c6254:
# the NIC QoS pre-flight runs nicctl on the bare host; the GPU drain gate reads rocm-smi);
# neither changes what the servers are started with.
UPSTREAM_SKIPS = {"SKIP_RDMA_CHECK": "1", "SKIP_GPU_SANITY": "1", "KEEP_LOGS": "1"}
# The process environment a recorded server has that is the stand-ins' or the shell's own,
# or a credential (never written out).
NOT_LAUNCH_ENV = {"PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "HOSTNAME", "TERM",
                  "HF_TOKEN", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "SLURM_PROCID",
                  "SLURMD_NODENAME", "SLURM_NODEID", "SLURM_LOCALID", "BASH_ENV", "LC_CTYPE"}
SECRETS = ("HF_TOKEN", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET")
MODEL_DIR_HOST = "/it-share/data"  # launch_mi355x-amds.sh@843c6254 MODEL_PATH
LOG_DIR = "/run_logs/slurm_job-4242"  # job.slurm's servers' log dir (`-v /tmp:/run_logs`)
MODE_ORDER = ("prefill", "decode", "agg")
ABSOLUTE_STANDINS = ("/usr/local/bin/atomesh",)
SYSTEM_BIN = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin")
# what upstream waits on before it benchmarks through the router
ROUTER_READY = {"sglang_router": "/readiness", "atomesh": "/v1/models"}
# The stand-in's network interface (standins/slurm_docker.py): a variable env.sh@843c6254 set
# from it (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME) is detected on the node at launch, with
# env.sh's own command, in the role's preamble.
NIC = "capturenic0"
NIC_DETECT = "$(ip route 2>/dev/null | grep '^default' | awk '{print $5}' | head -n 1)"


def is_standin(path: str) -> bool:
    """A host path that is one of the stand-ins (what `command -v nicctl` found here)."""
    p = Path(path)
    return p.name in STANDIN_NAMES and str(p.parent) not in SYSTEM_BIN


def is_upstream_script_key(e: dict[str, Any]) -> bool:
    return str(e.get("framework")) in (*FRAMEWORKS, *PYXIS_FRAMEWORKS)


def rows_with_shape(e: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(scenario block, row) in multinode.scenario_rows' order (the recipe's row indexes)."""
    out = []
    for _kind, blocks in (e.get("scenarios") or {}).items():
        for block in blocks or []:
            out += [(block, row) for row in block.get("search-space") or []]
    return out


def _flag(v: Any) -> str:
    return "true" if v is True else "false" if v is False else str(v)


def row_env(key: str, e: dict[str, Any], block: dict[str, Any], row: dict[str, Any],
            runner_name: str) -> dict[str, str]:
    """The environment benchmark-multinode-tmpl.yml@843c6254 gives the launch step: its `env:`
    block from the matrix job's inputs, the row's additional settings exported, IS_MULTINODE."""
    pre, dec = row["prefill"], row["decode"]
    agentic = "isl" not in block
    env = {
        "RANDOM_RANGE_RATIO": "0.8", "EXP_NAME": f"{e['model-prefix']}_{key}",
        "IMAGE": str(e["image"]), "MODEL_PREFIX": str(e["model-prefix"]),
        "MODEL": str(e["model"]), "FRAMEWORK": str(e["framework"]),
        # run-sweep.yml's multi-node agentic job passes isl/osl '0'
        "PRECISION": str(e["precision"]), "ISL": str(block.get("isl", "0")),
        "OSL": str(block.get("osl", "0")), "MAX_MODEL_LEN": "",
        "CONC_LIST": " ".join(str(c) for c in row.get("conc-list") or []),
        "SPEC_DECODING": str(row.get("spec-decoding", "none")), "DISAGG": "true",
        "RUN_EVAL": "false", "EVAL_ONLY": "false", "SWEBENCH_USE_MODAL": "true",
        "REQUIRE_POWER": "0", "SCENARIO_TYPE": "agentic-coding" if agentic else "fixed-seq-len",
        "SCENARIO_SUBDIR": "agentic/" if agentic else "fixed_seq_len/",
        "IS_AGENTIC": "1" if agentic else "0",
        "CONC": str((row.get("conc-list") or [""])[0]) if agentic else "",
        # generate_sweep_configs.py's DEFAULT_AGENTIC_DURATION_SECONDS (validation.py@843c6254)
        "DURATION": "3600" if agentic else "",
        "KV_OFFLOADING": str(row.get("kv-offloading", "none") or "none"),
        "KV_OFFLOAD_BACKEND": str((row.get("kv-offload-backend") or {}).get("name", "")),
        "KV_OFFLOAD_BACKEND_METADATA": json.dumps(row["kv-offload-backend"])
        if row.get("kv-offload-backend") else "",
        "KV_P2P_TRANSFER": str(e.get("kv-p2p-transfer", "")),
        "ROUTER_METADATA": json.dumps(e["router"]) if e.get("router") else "",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/tmp/inferencex-pycache",
        "RUNNER_NAME": runner_name, "IS_MULTINODE": "true",
        "GITHUB_WORKSPACE": "/workspace", "GITHUB_ACTIONS": "", "USER": "runner",
        **UPSTREAM_SKIPS,
    }
    for side, p in (("PREFILL", pre), ("DECODE", dec)):
        env.update({f"{side}_NUM_WORKERS": str(p.get("num-worker", 1)),
                    f"{side}_TP": str(p["tp"]), f"{side}_EP": str(p.get("ep", 1)),
                    f"{side}_DP_ATTN": _flag(bool(p.get("dp-attn"))),
                    f"{side}_PP_SIZE": str(p.get("pp", "")),
                    f"{side}_DCP_SIZE": str(p.get("dcp-size", "")),
                    f"{side}_PCP_SIZE": str(p.get("pcp-size", ""))})
    for s in [*(pre.get("additional-settings") or []), *(dec.get("additional-settings") or [])]:
        k, _, v = s.partition("=")
        env[k] = v
    return env


# upstream's matrix generator sizes an agentic row's DRAM KV offload (TOTAL_CPU_DRAM_GB, the
# workflow's total-cpu-dram-gb input) from the runner's hardware in configs/runners.yaml;
# it is run from the checkout by an interpreter with its dependencies (pydantic, pyyaml)
DRAM_GB = """
import json, sys
sys.path[:0] = ["utils/matrix_logic", "utils"]
import generate_sweep_configs as g
a = json.loads(sys.argv[1])
print(g.agentic_dram_offload_gb(a["block"], a["row"], a["runner"],
                                g.load_runner_file("configs/runners.yaml")))
"""


def matrix_dram_gb(checkout: Path, python: str, e: dict[str, Any], block: dict[str, Any],
                   row: dict[str, Any]) -> str:
    """utils/matrix_logic/generate_sweep_configs.py@843c6254 agentic_dram_offload_gb."""
    if row.get("kv-offloading") != "dram":
        return ""
    arg = json.dumps({"block": block, "row": row, "runner": e["runner"]})
    r = subprocess.run([python, "-c", DRAM_GB, arg], cwd=checkout, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise NotCaptured("upstream's matrix generator could not size the DRAM offload "
                          f"(TOTAL_CPU_DRAM_GB): {r.stderr.strip().splitlines()[-1:]}")
    return r.stdout.strip()


def build_bindir(bindir: Path, names: tuple[str, ...] = STANDIN_NAMES) -> None:
    """The stand-in program and each name it answers to, in `bindir` (put first on PATH)."""
    bindir.mkdir(parents=True, exist_ok=True)
    prog = bindir / "_slurm_docker"
    prog.write_text("#!/usr/bin/python3 -S\n" + STANDIN.read_text())
    prog.chmod(0o755)
    for name in names:
        (bindir / name).symlink_to("_slurm_docker")


def empty_profiles(upper: Path) -> None:
    """A login shell (`bash -lc`, job.slurm and its docker run) must keep the stand-ins' PATH:
    the host's profile files, which would reset it, read empty in the sandbox's layer."""
    for f in ("etc/profile", "root/.bash_profile", "etc/bash.bashrc"):
        (upper / f).parent.mkdir(parents=True, exist_ok=True)
        (upper / f).write_text("")


def run_chain(checkout: Path, env: dict[str, str], bound_s: float, bindir: Path
              ) -> tuple[list[dict[str, Any]], str]:
    """The launch step in a fresh sandbox: (the stand-in's records in order, output tail)."""
    box = Sandbox(checkout, keep=(bindir,))
    try:
        upper = box.base / "u"
        empty_profiles(upper)
        # programs the scripts start by absolute path (server_atom.sh: /usr/local/bin/atomesh)
        for path in ABSOLUTE_STANDINS:
            (upper / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (upper / path.lstrip("/")).symlink_to(bindir / "_slurm_docker")
        (upper / MODEL_DIR_HOST.lstrip("/") / str(env["MODEL"]).rsplit("/", 1)[-1]).mkdir(
            parents=True)
        run_env = {**env, "PATH": f"{bindir}:/usr/bin:/bin:/usr/sbin:/sbin",
                   "CAPTURE_RECORD_DIR": str(box.base / "rec"),
                   "CAPTURE_REAL_PYTHON": "/usr/bin/python3", "HOME": "/root"}
        run = box.run(f"bash ./runners/launch_{env['RUNNER_NAME'].split('_', 1)[0]}.sh",
                      run_env, bound_s)
        recs = [json.loads(p.read_text()) for p in sorted(run.records.glob("*.json"))]
        return recs, run.output
    finally:
        box.close()


def _arg(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv[:-1]):
        if a == flag:
            return argv[i + 1]
    return None


def _atom_mode(argv: list[str]) -> str | None:
    """ATOM's role: its --kv-transfer-config kv_role (server_atom.sh@843c6254)."""
    try:
        role = json.loads(_arg(argv, "--kv-transfer-config") or "{}").get("kv_role")
    except ValueError:
        return None
    return {"kv_producer": "prefill", "kv_consumer": "decode"}.get(role)


def _node_gpus(rec: dict[str, Any], gpn: int) -> int:
    """The GPUs a server uses on its node: its tensor-parallel size over its nodes (upstream
    sets no device list, so a TP4 server on an 8-GPU node takes GPUs 0-3), else the node's."""
    argv = rec["command"]
    tp = next((v for f in ("--tp-size", "--tp", "--tensor-parallel-size")
               if (v := _arg(argv, f)) and v.isdigit()), None)
    nnodes = int(_arg(argv, "--nnodes") or 1)
    return min(gpn, int(tp) // nnodes) if tp else gpn


def node_container_options(runs: list[dict[str, Any]], image: str) -> dict[str, Any]:
    """Every role runs in its node's container (job.slurm's one `docker run` of the image a
    node; the benchmark client's sibling container, CLIENT_IMAGE, is not a role's)."""
    return same_on_every_node({r["node"]: docker_options(r, MODEL_DIR_HOST, LOG_DIR,
                                                         is_standin)
                               for r in runs if r["image"] == image})


def to_cap(recs: list[dict[str, Any]], env: dict[str, str]) -> dict[str, Any]:
    """The stand-in's records in the srt-slurm driver's capture shape
    (multinode_roles.deployment reads it): workers by mode and instance, the router as the
    frontend, the Mooncake master as a helper."""
    sb = next((r for r in recs if r["role"] == "sbatch"), None)
    runs = [r for r in recs if r["role"] == "docker-run" and ("-d", None) not in
            [tuple(o) for o in r["options"]]]
    servers = [r for r in recs if r["role"] == "server"]
    if sb is None or not runs or not servers:
        raise NotCaptured("the scripts started no " + ("sbatch job" if sb is None else
                          "container" if not runs else "server"))
    n_nodes = int(dict(map(tuple, sb["options"])).get("-N", 1))
    image = runs[0]["image"]
    gpn = int(env.get("GPUS_PER_NODE") or runs[0]["container_env"].get("GPUS_PER_NODE") or 8)
    container = runs[0]["container_env"]
    options = node_container_options(runs, image)
    records: list[dict[str, Any]] = []
    instances: dict[tuple[str, str], list[dict[str, Any]]] = {}
    model_path = ""
    for r in servers:
        prog = r["argv"][0]  # the stand-in's path on PATH: the program's name
        argv = [prog if prog in ABSOLUTE_STANDINS else Path(prog).name, *r["argv"][1:]]
        env_set = {k: v for k, v in r["env"].items()
                   if k not in NOT_LAUNCH_ENV and not k.startswith("CAPTURE_")}
        detect = sorted(k for k, v in env_set.items() if NIC in v)
        for k in detect:
            del env_set[k]
        rec = {"command": argv, "env_to_set": env_set, "nodelist": [r["node"]],
               "container_image": image, "env_to_unset": [],
               "bash_preamble": " && ".join(f'export {k}="{NIC_DETECT}"' for k in detect)}
        if r["module"] == "sglang.launch_server" or r["module"].startswith("atom."):
            mode = _arg(argv, "--disaggregation-mode") or _atom_mode(argv) or "agg"
            model_path = model_path or (_arg(argv, "--model-path") or _arg(argv, "--model")
                                        or "")
            leader = _arg(argv, "--dist-init-addr") or r["node"]
            instances.setdefault((mode, leader), []).append(rec)
        elif r["module"] == "mooncake_master":
            records.append({**rec, "context": {"stage": "mooncake"}})
        else:
            records.append({**rec, "context": {"stage": "frontend"}})
    index: dict[str, int] = {}
    # instances by mode, then by their leader node (the nodes' servers start concurrently:
    # the records' order is not upstream's)
    for (mode, _leader), recs_ in sorted(instances.items(), key=lambda kv: (
            MODE_ORDER.index(kv[0][0]), kv[0][1])):
        recs_.sort(key=lambda x: int(_arg(x["command"], "--node-rank") or 0))
        nodes = [x["nodelist"][0] for x in recs_]
        i = index.setdefault(mode, 0)
        index[mode] += 1
        for x in recs_:
            x["context"] = {"stage": "worker", "mode": mode, "index": i,
                            "endpoint_nodes": nodes, "gpus": list(range(_node_gpus(x, gpn)))}
            records.append(x)
    for x in records:
        for k in SECRETS:
            x["env_to_set"].pop(k, None)
    return {"records": records, "services": [], "files": {}, "container_image": image,
            "gpus_per_node": gpn, "nodes": n_nodes, "infra": "srtnode000",
            "model_path": model_path, "log_dir": LOG_DIR, "container_env": container,
            "container_options": options}


def amd_deployment(cap: dict[str, Any], source: str) -> dict[str, Any]:
    dep = deployment(cap, source)
    for role in dep["roles"]:
        role["container"] = json.loads(json.dumps(cap["container_options"]))  # no YAML alias
    leaked = [w for w in (NIC, "mn-amd-", "/tmp/tmp") if w in repr(dep)]
    if leaked:
        raise NotCaptured(f"the capture's stand-in text is left in the launch: {leaked}")
    for role in dep["roles"]:
        if role["role"] == "frontend":  # the PD router in front of the workers
            role["role"], role["name"] = "router", "router"
            text = " ".join(role["argv"][:3])
            role["ready"] = next((v for k, v in ROUTER_READY.items() if k in text), "/health")
    return dep


def capture_one(checkout: Path, bindir: Path, env: dict[str, str], row: dict[str, Any],
                source: str, bound_s: float, dram: tuple = ()) -> dict[str, Any] | str:
    """One row's deployment, or why it is not captured."""
    from harness.catalog.multinode import pool
    from harness.catalog.multinode_gpus import read_pools

    out = ""
    try:
        if dram:
            env = {**env, "TOTAL_CPU_DRAM_GB": matrix_dram_gb(checkout, *dram)}
        if env["FRAMEWORK"] in PYXIS_FRAMEWORKS:  # llm-d, TileRT: multinode_pyxis.py
            from harness.catalog import multinode_pyxis

            recs, out = multinode_pyxis.run_chain(checkout, env, bound_s, bindir / "pyxis")
            dep = multinode_pyxis.pyxis_deployment(recs, env, source)
        else:
            recs, out = run_chain(checkout, env, bound_s, bindir)
            dep = amd_deployment(to_cap(recs, env), source)
        read_pools(pool(row["prefill"]), pool(row["decode"]), dep)
        return dep
    except NotCaptured as err:
        why = f"upstream's scripts ran: {err}"
        if str(err).startswith("the scripts started no"):
            why += " (their output ends: " + " | ".join(out.strip().splitlines()[-3:])[-300:] + ")"
        return why


def capture_rows(ix_git: str, commit: str, masters: dict, runners: dict,
                 keys: list[str] | None, bound_s: float = 120.0, jobs: int = 2,
                 rows: list[int] | None = None, python: str = sys.executable
                 ) -> tuple[dict[tuple[str, int], dict], dict[tuple[str, int], str]]:
    """Every row of every key upstream deploys with its own scripts: its deployment, or why
    it is not captured."""
    from concurrent.futures import ThreadPoolExecutor

    from harness.catalog.multinode_capture import git, launcher_of

    launchers = {p[len("runners/launch_"):-3] for p in git(
        ix_git, "ls-tree", "--name-only", commit, "runners/").split()
        if p.startswith("runners/launch_")}
    todo = []
    for master in masters.values():
        for key, e in master.items():
            if not (isinstance(e, dict) and e.get("multinode")
                    and is_upstream_script_key(e)) or (keys and key not in keys):
                continue
            launcher = launcher_of(str(e["runner"]), runners, launchers)
            names = (runners.get("labels") or {}).get(str(e["runner"])) or []
            runner_name = str(names[0]) if names else f"{launcher}_0"
            src = (f"SemiAnalysisAI/InferenceX@{commit} runners/launch_{launcher}.sh -> "
                   f"benchmarks/multi_node/*_{e['framework']}.sh -> amd_utils/ (via upstream's "
                   "scripts under the Slurm/Docker recording stand-in, "
                   "harness/catalog/multinode_amd.py)")
            if e["framework"] in CHAIN_DIRS:
                src = (f"SemiAnalysisAI/InferenceX@{commit} runners/launch_{launcher}.sh -> "
                       f"benchmarks/multi_node/*_{e['framework']}-disagg.sh -> "
                       f"{CHAIN_DIRS[e['framework']]} (via upstream's scripts under the "
                       "Slurm/pyxis recording stand-in, harness/catalog/multinode_pyxis.py)")
            for i, (block, row) in enumerate(rows_with_shape(e)):
                if rows is not None and i not in rows:
                    continue
                todo.append((key, i, row_env(key, e, block, row, runner_name), row, src,
                             (python, e, block, row)))
    with tempfile.TemporaryDirectory(prefix="mn-amd-") as tmp:
        checkout = Path(tmp) / "ix"
        checkout.mkdir()
        tar = subprocess.run(["git", "-C", ix_git, "archive", commit], check=True,
                             capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(checkout)], input=tar, check=True)
        bindir = Path(tmp) / "bin"
        build_bindir(bindir)
        if any(t[2]["FRAMEWORK"] in PYXIS_FRAMEWORKS for t in todo):
            from harness.catalog.multinode_pyxis import build_bindir as pyxis_bindir

            pyxis_bindir(bindir / "pyxis")
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            got = list(pool.map(lambda t: capture_one(checkout, bindir, t[2], t[3], t[4],
                                                      bound_s, t[5]), todo))
    deps: dict[tuple[str, int], dict[str, Any]] = {}
    missed: dict[tuple[str, int], str] = {}
    for (key, i, *_), res in zip(todo, got, strict=True):
        if isinstance(res, str):
            missed[(key, i)] = res
        else:
            deps[(key, i)] = res
        print(f"{key}[{i}]: {'captured' if isinstance(res, dict) else res}", file=sys.stderr)
    return deps, missed
