"""The llm-d and TileRT multi-node keys captured from upstream's own scripts, whose jobs start
pyxis containers (harness/catalog/multinode_pyxis.py): the records the stand-in made while
upstream's chain ran (srun --container-image steps, the servers in them) become the roles the
launcher starts; with InferenceX's git dir at hand the chain runs for real in the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.catalog import multinode_pyxis
from harness.catalog.multinode_template import NotCaptured
from tests.catalog.test_catalog_multinode import _check_deployment

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data/multinode_capture/pyxis"
MIRROR = Path(os.environ.get("INFERENCEX_GIT",
                             "/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
COMMIT = "843c6254ff69b567f772f6a5fd97675af3d04431"


def _load(name: str) -> tuple[list[dict], dict[str, str]]:
    d = json.loads((DATA / name).read_text())
    return d["recs"], d["env"]


def _row(key: str, i: int) -> dict:
    from tests.helpers import shipped_yaml

    recipe = shipped_yaml(ROOT / f"recipes/recipe/multinode/{key}.yaml")
    return recipe["search_space"][i]


def test_llmd_pyxis_step_becomes_prefill_decode_sidecar_epp_and_envoy_roles() -> None:
    recs, env = _load("dsv4-fp4-gb200-llmd-vllm-row0.json")
    dep = multinode_pyxis.pyxis_deployment(recs, env, "fixture")
    by = {r["name"]: r for r in dep["roles"]}
    assert list(by) == ["prefill", "decode", "pd-sidecar", "epp", "envoy"]
    assert dep["nodes"] == 4 and dep["gpus_per_node"] == 4
    assert dep["image"] == env["IMAGE"]  # the squash file's image, as the launcher named it
    pre, dec = by["prefill"], by["decode"]
    # one DEP8 engine over nodes 0-1 (hybrid LB, start ranks 0 and 4), one TP8 over 2-3
    assert pre["placement"] == [{"nodes": [0, 1], "devices": ["0,1,2,3", "0,1,2,3"]}]
    assert pre["gpus"] == dec["gpus"] == 8 and dec["placement"][0]["nodes"] == [2, 3]
    assert pre["argv"][:3] == ["vllm", "serve", "{model}"]
    assert pre["vary"]["vary_0"] == [["0", "4"]]  # --data-parallel-start-rank
    assert "{leader}" in pre["argv"] and "--headless" in str(dec["vary"])
    assert pre["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "{host}"
    assert "NCCL_SOCKET_IFNAME" not in pre["env"] and "/proc/net/route" in pre["preamble"]
    # EPP's config and file discovery written into the launch dir, the nodes as placeholders
    epp = by["epp"]
    assert "--config-file={launch_dir}/epp-config-from-recipe.yaml" in epp["argv"]
    assert "{launch_dir}/endpoints.yaml" in epp["files"]["epp-config-from-recipe.yaml"]
    assert "address: {node_2}" in epp["files"]["endpoints.yaml"]
    assert by["envoy"]["role"] == "router" and by["envoy"]["port"] == 8080
    assert by["envoy"]["argv"] == ["envoy", "-c", "{launch_dir}/envoy.yaml"]
    assert by["pd-sidecar"]["port"] == 8000 and by["pd-sidecar"]["placement"] == [
        {"nodes": [2]}]
    for r in dep["roles"]:  # upstream's pyxis flags; the model store at {model}
        assert r["container"] == {"runtime": "pyxis", "devices": [],
                                  "mounts": ["{model}:{model}:ro"],
                                  "options": ["--container-remap-root",
                                              "--container-writable"]}
    assert not {"HF_TOKEN", "PATH", "SLURM_JOB_ID"} & set(pre["env"])
    assert "srtnode" not in repr(dep) and "capturenic0" not in repr(dep)


def test_tilert_runs_decode_and_prefill_in_their_own_images() -> None:
    recs, env = _load("glm5.1-fp8-b200-tilert-row0.json")
    dep = multinode_pyxis.pyxis_deployment(recs, env, "fixture")
    by = {r["name"]: r for r in dep["roles"]}
    assert list(by) == ["decode", "prefill", "router"]  # upstream's start order
    assert dep["image"] == "ghcr.io/tile-ai/tilert:0.1.5" and "image" not in by["decode"]
    assert by["prefill"]["image"] == by["router"]["image"] == "vllm/vllm-openai:v0.26.0"
    assert by["decode"]["argv"][:3] == ["python", "-m", "tilert.pd_vllm.decode_server"]
    assert by["decode"]["placement"][0]["nodes"] == [0]
    assert by["prefill"]["placement"][0]["nodes"] == [1]
    assert by["decode"]["gpus"] == by["prefill"]["gpus"] == 8
    # the prefill's connector and the router reach the decode node's control ports
    assert '"tilert_host":"{head}"' in " ".join(by["prefill"]["argv"])
    assert "{head}:5556:5557" in by["router"]["argv"]
    assert by["router"]["port"] == 8888 and by["router"]["ready"] == "/health"
    # the one-time weight conversion, guarded by the index file run_node.sh checks for
    assert "tilert.models.preprocess.weight_converter" in by["decode"]["preamble"]
    assert "model.safetensors.index.json" in by["decode"]["preamble"]
    assert by["decode"]["env"]["UCX_NET_DEVICES"].startswith("mlx5_0:1")
    assert by["decode"]["container"]["options"] == ["--no-container-entrypoint"]
    assert "{model}:{model}" in by["decode"]["container"]["mounts"]


def test_a_chain_that_started_no_container_is_not_captured() -> None:
    recs, env = _load("glm5.1-fp8-b200-tilert-row0.json")
    with pytest.raises(NotCaptured, match="started no pyxis container"):
        multinode_pyxis.pyxis_deployment([r for r in recs if r["role"] != "pyxis"], env, "x")


def test_the_shipped_tilert_rows_are_launchable_deployments() -> None:
    for i in (0, 1):
        row = _row("glm5.1-fp8-b200-tilert", i)
        dep = row["deployment"]
        from harness.catalog.multinode import split_additions

        plain, extra = split_additions(dep)
        _check_deployment(f"tilert row {i}", row, plain, extra)
        assert "tilert_utils/" in dep["source"]


@pytest.mark.slow
@pytest.mark.skipif(not (MIRROR / "objects").exists() and not (MIRROR / ".git").exists(),
                    reason="no InferenceX git dir (INFERENCEX_GIT, the fetch tool's mirror)")
def test_upstreams_tilert_chain_run_in_the_sandbox_reproduces_the_shipped_row() -> None:
    from harness.catalog import multinode, multinode_amd

    commit, masters = multinode.read_masters(str(MIRROR), COMMIT)
    runners = yaml.safe_load(subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{commit}:configs/runners.yaml"],
        capture_output=True, text=True, check=True).stdout)
    key = "glm5.1-fp8-b200-tilert"
    deps, missed = multinode_amd.capture_rows(str(MIRROR), commit, masters, runners, [key],
                                              jobs=1, rows=[0])
    assert not missed, missed
    shipped = _row(key, 0)["deployment"]
    assert deps[(key, 0)] == yaml.safe_load(yaml.safe_dump(shipped).replace("\\${", "${"))


def test_the_stand_in_records_a_pyxis_step_and_runs_it_on_each_node(tmp_path) -> None:
    """`srun --container-image ...` (standins/slurm_docker.py, run for real): one record with
    the image, mounts and flags; the command once per node with srun's environment plus
    --export's, each mount target a link to its source, in --container-workdir."""
    bindir, rec = tmp_path / "bin", tmp_path / "rec"
    rec.mkdir()
    multinode_pyxis.build_bindir(bindir)
    src, dst, work = tmp_path / "src", tmp_path / "dst", tmp_path / "work"
    src.mkdir()
    work.mkdir()
    (src / "weights.txt").write_text("w")
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "CAPTURE_RECORD_DIR": str(rec),
           "SLURM_JOB_NODELIST": "srtnode000,srtnode001", "KEEP": "job"}
    script = 'echo "$SLURM_PROCID $CAPTURE_NODE $KEEP $ROLE $(pwd) $(cat dst/weights.txt)"'
    p = subprocess.run(
        [str(bindir / "srun"), "--container-image=/sq/img.sqsh",
         f"--container-mounts={src}:{dst}:ro", f"--container-workdir={tmp_path}",
         "--container-remap-root", "--export=ALL,ROLE=decode", "bash", "-c", script],
        env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.splitlines()) == [
        f"0 srtnode000 job decode {tmp_path} w", f"1 srtnode001 job decode {tmp_path} w"]
    [r] = [json.loads(f.read_text()) for f in rec.glob("*.json")]
    assert r["role"] == "pyxis" and r["image"] == "/sq/img.sqsh"
    assert r["nodes"] == ["srtnode000", "srtnode001"]
    assert ["--container-remap-root", None] in r["options"]
    assert r["container_env"]["ROLE"] == "decode" and r["command"][:2] == ["bash", "-c"]
