"""The AMD multi-node keys captured from upstream's own scripts (harness/catalog/multinode_amd.py):
the records the Slurm/Docker stand-in made while upstream's chain ran become the roles the
launcher starts; with InferenceX's git dir at hand (the `fetch` tool's mirror) the chain runs
for real in the sandbox and reproduces the shipped recipe's row."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.catalog import multinode_amd
from tests.catalog.test_catalog_multinode import _check_deployment, _rows_with_deployments

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/data/multinode_capture/amd/dsr1-fp4-mi355x-sglang-disagg-row0.json"
KEY = "dsr1-fp4-mi355x-sglang-disagg"
MIRROR = Path(os.environ.get("INFERENCEX_GIT",
                             "/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
COMMIT = "843c6254ff69b567f772f6a5fd97675af3d04431"


def _shipped_row0() -> tuple[dict, dict, dict]:
    [(_i, row, dep, extra), *_] = list(_rows_with_deployments(
        ROOT / f"recipes/recipe/multinode/{KEY}.yaml"))
    return row, dep, extra


def test_the_recorded_chain_becomes_prefill_decode_and_router_roles() -> None:
    recs = json.loads(FIXTURE.read_text())
    cap = multinode_amd.to_cap(recs, {"GPUS_PER_NODE": "8"})
    dep = multinode_amd.amd_deployment(cap, "fixture")
    by = {r["name"]: r for r in dep["roles"]}
    assert list(by) == ["prefill", "decode", "router"]
    assert dep["nodes"] == 2 and dep["gpus_per_node"] == 8
    assert dep["image"].startswith("lmsysorg/sglang-rocm:")
    pre, dec, router = by["prefill"], by["decode"], by["router"]
    assert pre["placement"] == [{"nodes": [0], "devices": ["0,1,2,3,4,5,6,7"]}]
    assert dec["placement"][0]["nodes"] == [1] and pre["gpus"] == dec["gpus"] == 8
    assert pre["argv"][:5] == ["python3", "-m", "sglang.launch_server", "--model-path", "{model}"]
    assert "--disaggregation-mode" in pre["argv"] and "prefill" in pre["argv"]
    assert "decode" in dec["argv"] and "rdma0,rdma1,rdma2,rdma3,rdma4,rdma5,rdma6,rdma7" \
        in dec["argv"]
    # the router on node 0 reaches each worker at its node's address
    assert router["role"] == "router" and router["port"] == 30000
    assert router["ready"] == "/readiness" and router["placement"] == [{"nodes": [0]}]
    assert "http://{node_1}:8000" in router["argv"]
    # the interface env.sh detects is detected on the node, not the stand-in's answer
    assert "GLOO_SOCKET_IFNAME" not in pre["env"] and "ip route" in pre["preamble"]
    assert not {"HF_TOKEN", "MODAL_TOKEN_SECRET", "PATH"} & set(pre["env"])
    assert "capturenic0" not in repr(dep) and "srtnode" not in repr(dep)


def test_the_shipped_amd_rows_are_launchable_deployments() -> None:
    row, dep, extra = _shipped_row0()
    _check_deployment(f"{KEY} row 0", row, dep, extra)
    assert "runners/launch_mi355x-amds.sh" in dep["source"]


@pytest.mark.slow
@pytest.mark.skipif(not (MIRROR / "objects").exists() and not (MIRROR / ".git").exists(),
                    reason="no InferenceX git dir (INFERENCEX_GIT, the fetch tool's mirror)")
def test_upstreams_scripts_run_in_the_sandbox_reproduce_the_shipped_row(tmp_path) -> None:
    """launch_mi355x-amds.sh and the whole amd_utils chain, run for real under the stand-in,
    give the deployment the shipped recipe's row 0 carries."""
    from harness.catalog import multinode

    commit, masters = multinode.read_masters(str(MIRROR), COMMIT)
    runners = yaml.safe_load(subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{commit}:configs/runners.yaml"],
        capture_output=True, text=True, check=True).stdout)
    deps, missed = multinode_amd.capture_rows(str(MIRROR), commit, masters, runners, [KEY],
                                              jobs=1, rows=[0])
    assert not missed, missed
    got = deps[(KEY, 0)]
    _row, shipped, _extra = _shipped_row0()
    assert multinode.split_additions(got)[0] == yaml.safe_load(
        yaml.safe_dump(shipped).replace("\\${", "${"))


def _fixture_deployment(recs: list[dict]) -> dict:
    return multinode_amd.amd_deployment(multinode_amd.to_cap(recs, {"GPUS_PER_NODE": "8"}),
                                        "fixture")


def test_the_recorded_docker_run_options_become_every_roles_container() -> None:
    """job.slurm@843c6254's `docker run` options, typed: devices, mounts (the model store as
    {model}), the rest as upstream's flags; never the environment, the name or a credential."""
    recs = json.loads(FIXTURE.read_text())
    for r in recs:  # a credential passed by -e / --env-file must never reach the recipe
        if r["role"] == "docker-run":
            r["options"] += [["-e", "HF_TOKEN=hf_secret_value"], ["--env-file", "/root/.env"]]
    dep = _fixture_deployment(recs)
    containers = [r["container"] for r in dep["roles"]]
    assert len(containers) == 3 and all(c == containers[0] for c in containers)
    c = containers[0]
    assert c["runtime"] == "docker"
    assert c["devices"][:3] == ["/dev/dri", "/dev/kfd", "/dev/infiniband"]
    assert "/dev/infiniband/uverbs7" in c["devices"]
    # /sys kept; MODEL_DIR:/models is the checkpoint at its own path; /tmp:/run_logs is the
    # launch dir; ~/.ssh, the checkout, the job's files and the nicctl stand-in are not carried
    assert c["mounts"] == ["/sys:/sys", "{model}:{model}"]
    flags = c["options"]
    assert "--privileged" in flags and "--init" in flags
    for name, value in (("--ipc", "host"), ("--network", "host"), ("--shm-size", "128G"),
                        ("--security-opt", "seccomp=unconfined"), ("--cap-add", "SYS_PTRACE"),
                        ("--group-add", "video"), ("--entrypoint", "")):
        assert flags[flags.index(name) + 1] == value, name
    assert [flags[i + 1] for i, f in enumerate(flags) if f == "--ulimit"] == [
        "memlock=-1", "stack=67108864", "nofile=1048576:1048576"]
    text = repr(c)
    for gone in ("-e", "--env-file", "--name", "hf_secret", "HF_TOKEN", ".ssh", "/workspace",
                 "nicctl", "/run_logs", "srtnode"):
        assert gone not in flags and (gone.startswith("-") or gone not in text), gone


def test_nodes_started_with_different_container_options_are_not_captured() -> None:
    recs = json.loads(FIXTURE.read_text())
    run = next(r for r in recs if r["role"] == "docker-run")
    run["options"].append(["--device", "/dev/only-here"])
    with pytest.raises(multinode_amd.NotCaptured, match="differ between nodes"):
        _fixture_deployment(recs)


def test_the_shipped_amd_rows_carry_docker_run_options() -> None:
    for path in sorted((ROOT / "recipes/recipe/multinode").glob("*mi355x*.yaml")):
        for i, _row, dep, _extra in _rows_with_deployments(path):
            for r in dep["roles"]:
                c = r.get("container")
                assert c and c["runtime"] == "docker", f"{path.name}[{i}] {r['name']}"
                assert "/dev/kfd" in c["devices"] and "--privileged" in c["options"]
                assert "{model}:{model}" in c["mounts"]
