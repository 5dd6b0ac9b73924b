"""Multi-node keys upstream deploys with its own scripts that start pyxis containers
(`srun --container-image ...`): llm-d (`llmd-vllm`: runners/launch_gb200-nv.sh ->
benchmarks/multi_node/dsv4_fp4_gb200_llmd-vllm-disagg.sh -> llm-d/{submit.sh,job.slurm,
server.sh}) and TileRT (`tilert`: runners/launch_b200-dgxc-slurm.sh ->
benchmarks/multi_node/glm5.1_fp8_b200_tilert-disagg.sh -> tilert_utils/{submit.sh,
run_node.sh,setup_deps.sh}), all at SemiAnalysisAI/InferenceX@843c6254.

They run as the AMD chain runs (harness/catalog/multinode_amd.py): the workflow's launch step
with the row's environment, in the import sandbox, under the Slurm/Docker recording stand-in
(harness/catalog/standins/slurm_docker.py), which also plays pyxis, salloc and enroot. The
chain runs in its own network namespace whose loopback every node name resolves to, so the
stand-in servers listen on their ports and bash's `/dev/tcp` probes in upstream's scripts
(llm-d's EPP wait, TileRT's wait_for_tcp) find them. What ran becomes the row's deployment,
or the reason it cannot (docs/multinode.md, "pyxis keys")."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from harness.catalog import multinode_amd as amd
from harness.catalog.container_capture import pyxis_options
from harness.catalog.multinode_template import NotCaptured
from harness.catalog.sandbox import Sandbox

FRAMEWORKS = ("llmd-vllm", "tilert")
STANDIN_NAMES = (*amd.STANDIN_NAMES, "salloc", "enroot", "unsquashfs", "vllm", "pd-sidecar",
                 "epp", "envoy")
# The launcher's MODEL_PATH for the row's model (its first `export MODEL_PATH="..."` under
# the `$MODEL_PREFIX == ... && $PRECISION == ...` test): the sandbox makes that directory,
# which llm-d's job.slurm checks on every node (`test -d`).
MODEL_PATH_RE = (r'MODEL_PREFIX"? == "{}" && "?\$PRECISION"? == "{}" \]\]; then[ \t]*\n'
                 r'(?:[ \t]*#[^\n]*\n)*[ \t]*export MODEL_PATH="([^"$]+)"')


def launcher_model_path(text: str, env: dict[str, str]) -> str:
    m = re.search(MODEL_PATH_RE.format(re.escape(env["MODEL_PREFIX"]),
                                       re.escape(env["PRECISION"])), text)
    if m is None:
        raise NotCaptured(f"the launcher sets no MODEL_PATH for {env['MODEL_PREFIX']} "
                          f"{env['PRECISION']}")
    return m.group(1)


# the launchers' squash directories (`SQUASH_DIR="..."`), which their import locks write in
SQUASH_DIR = re.compile(r'^\s*SQUASH_DIR="(/[^"$]+)"', re.M)
# What tilert_ut/setup_deps.sh@843c6254 requires of the images and probes for (it exits
# where one is missing): tilert at its pin TILERT_VERSION, nixl at TILERT_NIXL_VERSION,
# transformers >= 5.4.0, uvicorn, and vLLM in the prefill image (PREFILL_IMAGE's v0.26.0).
# The capture has no image to ask, so the stand-in answers as an image that carries them.
IMAGE_PACKAGES = {"tilert": {"tilert": "0.1.5.post2", "nixl": "1.3.1", "transformers": "5.4.0",
                             "uvicorn": "0.30.0", "vllm": "0.26.0"}}
# run_node.sh stages these from the checkpoint dir next to the converted weights
CHECKPOINT_FILES = {"tilert": ("chat_template.jinja", "tokenizer_config.json",
                               "tokenizer.json", "config.json")}
NODES = 32  # node names /etc/hosts resolves to the chain's loopback
LOOPBACK_UP = "/bin/ip link set lo up"


def is_pyxis_key(e: dict[str, Any]) -> bool:
    return str(e.get("framework")) in FRAMEWORKS


def build_bindir(bindir: Path) -> None:
    amd.build_bindir(bindir, STANDIN_NAMES)  # the AMD stand-in, answering to pyxis's names too


def run_chain(checkout: Path, env: dict[str, str], bound_s: float, bindir: Path
              ) -> tuple[list[dict[str, Any]], str]:
    """The launch step in a fresh sandbox and network namespace: (records, output tail)."""
    box = Sandbox(checkout, keep=(bindir,))
    try:
        upper = box.base / "u"
        amd.empty_profiles(upper)
        names = " ".join(f"srtnode{i:03d}" for i in range(NODES))
        (upper / "etc/hosts").write_text(f"127.0.0.1 localhost {names}\n")
        fw = env["FRAMEWORK"]
        launcher = f"./runners/launch_{env['RUNNER_NAME'].split('_', 1)[0]}.sh"
        text = (checkout / launcher).read_text() if (checkout / launcher).exists() else ""
        model = launcher_model_path(text, env)
        for d in (model, *SQUASH_DIR.findall(text)):
            (upper / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for name in CHECKPOINT_FILES.get(fw, ()):
            (upper / model.lstrip("/") / name).write_text("{}\n")
        run_env = {**env, "PATH": f"{bindir}:/usr/bin:/bin:/usr/sbin:/sbin",
                   "CAPTURE_RECORD_DIR": str(box.base / "rec"),
                   "CAPTURE_REAL_PYTHON": "/usr/bin/python3", "HOME": "/root",
                   "CAPTURE_LISTEN": "1",
                   "CAPTURE_IMAGE_PACKAGES": json.dumps(IMAGE_PACKAGES.get(fw, {}))}
        run = box.run(f"exec unshare -n -- /bin/sh -c '{LOOPBACK_UP} && exec bash {launcher}'",
                      run_env, bound_s)
        recs = [json.loads(p.read_text()) for p in sorted(run.records.glob("*.json"))]
        return recs, run.output
    finally:
        box.close()


def squash_image(path: str, env: dict[str, str]) -> str:
    """The image a squash file holds: upstream names it after the image, `/:@#` as `_`
    (launch_gb200-nv.sh, tilert_utils/submit.sh @843c6254)."""
    for k in ("IMAGE", "PREFILL_IMAGE", "DECODE_IMAGE"):
        image = env.get(k, "")
        if image and Path(path).name == re.sub(r"[/:@#]", "_", image) + ".sqsh":
            return image
    raise NotCaptured(f"the squash file {path} is none of the row's images")


def _arg(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _kv_mode(argv: list[str]) -> str:
    """vLLM's role: its --kv_transfer_config kv_role (llm-d/server.sh@843c6254)."""
    raw = _arg(argv, "--kv_transfer_config") or _arg(argv, "--kv-transfer-config") or "{}"
    try:
        role = json.loads(raw).get("kv_role")
    except ValueError:
        role = None
    return {"kv_producer": "prefill", "kv_consumer": "decode"}.get(str(role), "agg")


def _launch_env(rec: dict[str, Any], job_env: dict[str, str]) -> dict[str, str]:
    """What the server's process has beyond `job_env`, less the shell's and the stand-ins'
    own variables and credentials. Pyxis passes the job's whole environment into the
    container: llm-d's baseline is the step's environment (what server.sh exports is the
    server's), TileRT's the workflow's (its launcher exports the servers' UCX settings)."""
    return {k: v for k, v in rec["env"].items()
            if job_env.get(k) != v and k not in amd.NOT_LAUNCH_ENV and k not in amd.SECRETS
            and not k.startswith(("CAPTURE_", "SLURM_"))}


# server.sh's own way to the node's default interface (the image has no iproute2)
NIC_DETECT = "$(awk '$2 == \"00000000\" {print $1; exit}' /proc/net/route)"


def _record(r: dict[str, Any], job_env: dict[str, str], image: str) -> dict[str, Any]:
    env = _launch_env(r, job_env)
    detect = sorted(k for k, v in env.items() if v == amd.NIC)
    for k in detect:
        del env[k]
    return {"command": [Path(r["argv"][0]).name, *r["argv"][1:]], "env_to_set": env,
            "nodelist": [r["node"]], "container_image": image, "env_to_unset": [],
            "bash_preamble": " && ".join(f'export {k}="{NIC_DETECT}"' for k in detect)}


def llmd_cap(recs: list[dict[str, Any]], env: dict[str, str]) -> dict[str, Any]:
    """The chain's records in the srt-slurm capture's shape (multinode_roles.deployment):
    each `vllm serve` a worker of its mode, the nodes of one engine grouped by its
    data-parallel address (or --master-addr), ordered by start rank (or --node-rank)."""
    step = next(r for r in recs if r["role"] == "pyxis")
    image = squash_image(dict(map(tuple, step["options"]))["--container-image"], env)
    # llm-d's job.slurm names what its container needs (--container-env): the environment
    # the step started with is job plumbing, what server.sh exported on top is the server's
    job_env = step["container_env"]
    gpn = int(job_env.get("GPUS_PER_NODE") or env.get("GPUS_PER_NODE") or 4)
    engines: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    others = []
    for r in recs:
        if r["role"] != "server":
            continue
        if r["module"] != "vllm":
            others.append(r)
            continue
        argv = r["argv"]
        leader = _arg(argv, "--data-parallel-address") or _arg(argv, "--master-addr") \
            or r["node"]
        rank = int(_arg(argv, "--data-parallel-start-rank") or _arg(argv, "--node-rank") or 0)
        engines.setdefault((_kv_mode(argv), leader), []).append((rank, _record(r, job_env,
                                                                               image)))
    records, index = [], {}
    for (mode, _leader), procs in sorted(engines.items(), key=lambda kv: (
            amd.MODE_ORDER.index(kv[0][0]), kv[0][1])):
        procs.sort(key=lambda t: t[0])
        nodes = [p["nodelist"][0] for _, p in procs]
        i = index.setdefault(mode, 0)
        index[mode] += 1
        for _, p in procs:
            p["context"] = {"stage": "worker", "mode": mode, "index": i,
                            "endpoint_nodes": nodes, "gpus": list(range(gpn))}
            records.append(p)
    return {"records": records, "services": [], "files": {}, "container_image": image,
            "gpus_per_node": gpn, "nodes": len(step["nodes"]), "infra": "srtnode000",
            "model_path": "/models", "log_dir": "", "others": others, "job_env": job_env,
            "step": step}


# llm-d's helpers on the decode leader: (role name, kind, HTTP port, readiness path)
LLMD_HELPERS = {"pd-sidecar": ("pd-sidecar", "helper", 8000, "/health"),
                "epp": ("epp", "helper", None, None), "envoy": ("envoy", "router", 8080, None)}


def llmd_deployment(recs: list[dict[str, Any]], env: dict[str, str], source: str
                    ) -> dict[str, Any]:
    from harness.catalog.multinode_roles import _single, deployment
    from harness.catalog.multinode_template import Normalizer

    cap = llmd_cap(recs, env)
    dep = deployment(cap, source)
    anywhere = Normalizer(cap, "", "")
    by_program: dict[str, list[dict[str, Any]]] = {}
    for r in cap["others"]:
        if r["module"] not in LLMD_HELPERS:
            raise NotCaptured(f"llm-d started {r['module']}, which has no role here")
        by_program.setdefault(r["module"], []).append(r)
    for program, group in by_program.items():
        group.sort(key=lambda r: r["node"])  # the nodes start theirs concurrently
        name, kind, port, ready = LLMD_HELPERS[program]
        if len(group) > 1:  # a sidecar on every decode node (DEP8): the launcher would move
            port = ready = None  # a second instance's port, which its argv names literally
        role = _single(cap, name, kind, [_record(r, cap["job_env"], cap["container_image"])
                                         for r in group], port, ready)
        r = group[0]
        # the config files the job wrote (or mounted) before starting it: into the launch
        # dir, the argv and the other files naming them there
        files = r.get("files") or {}
        for path, content in files.items():
            ref = "{launch_dir}/" + Path(path).name
            role["argv"] = [a.replace(path, ref) for a in role["argv"]]
            for other in files:
                content = content.replace(other, "{launch_dir}/" + Path(other).name)
            role.setdefault("files", {})[Path(path).name] = anywhere.text(content)
        dep["roles"].append(role)
    opts = pyxis_options(cap["step"], cap["step"]["container_env"]["MODEL_PATH"],
                         "/benchmark_logs", amd.is_standin)
    for role in dep["roles"]:
        role["container"] = json.loads(json.dumps(opts))
    return _checked(dep)


def tilert_deployment(recs: list[dict[str, Any]], env: dict[str, str], source: str
                      ) -> dict[str, Any]:
    """TileRT's two pyxis containers (tilert_utils/submit.sh@843c6254): the decode server in
    the TileRT image on the first node, vLLM's prefill and TileRT's PD router in the vLLM
    image on the second; the decode node converts the weights first (run_node.sh
    convert_weights, cached by the index file it checks for): the decode role's preamble."""
    from harness.catalog.multinode_roles import _single, deployment

    steps = {r["nodes"][0]: r for r in recs if r["role"] == "pyxis"}
    image_of = {n: squash_image(dict(map(tuple, r["options"]))["--container-image"], env)
                for n, r in steps.items()}
    gpn = int(env.get("GPUS_PER_NODE") or max(int(env.get("PREFILL_TP") or 8),
                                              int(env.get("DECODE_TP") or 8)))
    workers, routers, index = [], [], {}
    for r in recs:
        if r["role"] != "server":
            continue
        rec = _record(r, env, image_of[r["node"]])
        if r["module"] == "tilert.pd_vllm.pd_router":
            routers.append(rec)
            continue
        mode = "decode" if r["module"] == "tilert.pd_vllm.decode_server" else _kv_mode(r["argv"])
        i = index.setdefault(mode, 0)
        index[mode] += 1
        rec["context"] = {"stage": "worker", "mode": mode, "index": i,
                          "endpoint_nodes": [r["node"]], "gpus": list(range(gpn))}
        workers.append(rec)
    convert = [r for r in recs if r["role"] == "setup"]
    for w in workers:
        if convert and w["context"]["mode"] == "decode":
            argv = [Path(convert[0]["argv"][0]).name, *convert[0]["argv"][1:]]
            out = argv[argv.index("--save_dir") + 1]
            w["bash_preamble"] = " && ".join(filter(None, [w["bash_preamble"], (
                f'{{ [ -f "{out}/model.safetensors.index.json" ] || '
                + " ".join(shlex.quote(a) for a in argv) + "; }")]))
    # in upstream's start order: decode first (prefill waits for its control port)
    model = next(iter(steps.values()))["container_env"]["MODEL_PATH"]  # the launcher's
    cap = {"records": workers, "services": [], "files": {}, "container_image": env["IMAGE"],
           "gpus_per_node": gpn, "nodes": len(steps), "infra": "srtnode000",
           "model_path": model, "log_dir": ""}
    dep = deployment(cap, source)
    if routers:
        dep["roles"].append(_single(cap, "router", "router", routers,
                                    int(_arg(routers[0]["command"], "--port") or 8888),
                                    "/health"))
    by_node = {n: pyxis_options(r, model, "", amd.is_standin)
               for n, r in steps.items()}
    for role in dep["roles"]:
        node = f"srtnode{role['placement'][0]['nodes'][0]:03d}"
        role["container"] = json.loads(json.dumps(by_node[node]))
    return _checked(dep)


def _checked(dep: dict[str, Any]) -> dict[str, Any]:
    leaked = [w for w in (amd.NIC, "mn-px-", "/tmp/", "srtnode") if w in repr(dep)]
    if leaked:
        raise NotCaptured(f"the capture's stand-in text is left in the launch: {leaked}")
    return dep


def pyxis_deployment(recs: list[dict[str, Any]], env: dict[str, str], source: str
                     ) -> dict[str, Any]:
    """The row's deployment from what the chain started, or why it cannot be one."""
    steps = [r for r in recs if r["role"] == "pyxis"]
    servers = [r for r in recs if r["role"] == "server"]
    if not steps or not servers:
        raise NotCaptured("the scripts started no " + ("pyxis container" if not steps
                                                       else "server"))
    if env["FRAMEWORK"] == "llmd-vllm":
        return llmd_deployment(recs, env, source)
    if env["FRAMEWORK"] == "tilert":
        return tilert_deployment(recs, env, source)
    raise NotCaptured("roles from this chain are not built: "
                      + ", ".join(sorted({r["module"] for r in servers})))
