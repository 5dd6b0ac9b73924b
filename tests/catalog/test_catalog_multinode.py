"""InferenceX's multi-node keys as attach recipes (harness/catalog/multinode.py): pools, GPU
counts, draft lengths and deployments read from a master entry; the shipped recipes under
recipes/recipe/multinode/ compose and count their GPUs as prefill + decode pools."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.catalog.multinode import CatalogError, attach_recipe, deploy_name, split_additions
from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.launches import launches
from harness.config.validate import gpus_of
from tests.helpers import shipped_yaml

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "recipes/recipe/multinode").glob("*.yaml"))

ENTRY = {  # the shape of configs/nvidia-master.yaml@843c6254's dynamo keys, values ours
    "image": "img:1", "model": "x", "model-prefix": "dsr1", "runner": "cluster:gb200-nv",
    "precision": "fp4", "framework": "dynamo-sglang", "multinode": True, "disagg": True,
    "scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": [
        {"spec-decoding": "mtp", "conc-list": [4, 8],
         "prefill": {"num-worker": 2, "tp": 4, "ep": 4, "dp-attn": True, "pcp-size": 2,
                     "additional-settings": ["CONFIG_FILE=recipes/a/ctx2_gen1_mtp2.yaml"]},
         "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": True}},
        {"spec-decoding": "none", "conc-list": [64],
         "prefill": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False,
                     "additional-settings": ["PREFILL_NODES=1"]},
         "decode": {"num-worker": 3, "tp": 8, "ep": 1, "dp-attn": False,
                    "additional-settings": ["DECODE_NODES=3", "DECODE_MTP_SIZE=0"]}},
    ]}]},
}


def test_attach_recipe_reads_pools_draft_length_and_deployment() -> None:
    r = attach_recipe(ENTRY, "k1", "abc", "configs/nvidia-master.yaml")
    assert {"override /engine": "endpoint"} in r["defaults"]
    assert {"override /chip": "gb200"} in r["defaults"]
    assert {"override /scenarios": "fixed-1k1k"} in r["defaults"]
    assert r["recipe_source"].startswith("SemiAnalysisAI/InferenceX@abc configs/nvidia-master")
    a, b = r["search_space"]
    assert a["prefill"] == {"workers": 2, "tp": 4, "ep": 4, "dp_attention": True, "pcp": 2}
    assert a["speculator_k"] == 2 and a["deploy_recipe"] == "recipes/a/ctx2_gen1_mtp2.yaml"
    assert b["spec_decoding"] is False and "speculator_k" not in b
    assert b["deploy_recipe"] == "PREFILL_NODES:1/DECODE_NODES:3/DECODE_MTP_SIZE:0"
    assert deploy_name(ENTRY["scenarios"]["fixed-seq-len"][0]["search-space"][0]).endswith(
        "mtp2.yaml")


def test_a_single_node_key_is_refused() -> None:
    with pytest.raises(CatalogError, match="not a multi-node key"):
        attach_recipe({**ENTRY, "multinode": False}, "k1", "abc", "m.yaml")


def _deployments(path: Path) -> dict[str, int]:
    """Each deployment of a shipped recipe and its GPUs, counted from the file's pools."""
    out: dict[str, int] = {}
    for row in shipped_yaml(path)["search_space"]:
        gpus = sum(p["workers"] * p["tp"] * p.get("pp", 1) * p.get("pcp", 1)
                   for p in (row["prefill"], row["decode"]))
        out[row["deploy_recipe"]] = gpus
    return out


def _compose(key: str, deployment: str | None):
    model = shipped_yaml(ROOT / f"recipes/recipe/multinode/{key}.yaml")
    name = model["defaults"][0]["override /model"]
    if not (ROOT / f"recipes/model/{name}.yaml").exists():
        pytest.skip(f"recipes/model/{name}.yaml not shipped yet (the models branch adds it)")
    ov = [f"recipe=multinode/{key}", "engine=endpoint", "engine.url=http://127.0.0.1:9"]
    return compose_sweep(ov + ([f"engine.deployment={deployment}"] if deployment else []))


def test_a_shipped_key_measures_one_deployment_with_its_gpus() -> None:
    key = "dsr1-fp4-b200-dynamo-trt"
    dep = "recipes/trtllm/b200-fp4/8k1k/mtp/ctx1_gen3_tep8_batch16_eplb0_mtp3.yaml"
    [one] = launches(_compose(key, dep))
    assert gpus_of(one.sc) == 1 * 4 + 3 * 8 and one.sc.concurrency == [66]
    assert one.sc.topology.decode.workers == 3 and one.sc.speculator.k == 3
    with pytest.raises(ConfigError, match=r"deployments; engine\.url is one"):
        _compose(key, None)
    with pytest.raises(ConfigError, match="no row of this recipe is deployed by"):
        _compose(key, dep.replace("gen3", "gen9"))


def test_all_94_multinode_keys_are_shipped() -> None:
    assert len(SHIPPED) == 94


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_multinode_key_composes_and_counts_its_gpus(path: Path) -> None:
    deps = _deployments(path)
    dep = sorted(deps)[0]
    launched = launches(_compose(path.stem, dep))
    assert launched and all(gpus_of(one.sc) == deps[dep] for one in launched)
    assert all(one.sc.engine.kind == "endpoint" for one in launched)


# --- the per-role launch captured into the rows (harness/catalog/multinode_capture.py) ---

CONTRACT = {"model", "served_name", "host", "head", "leader", "node_rank", "instance", "port",
            "launch_dir"}
ADDED = {"devices", "local_rank"}  # plus {node_N} and {vary_N}: docs/multinode.md
ROLE_KINDS = {"frontend", "router", "prefill", "decode", "aggregated", "etcd", "nats",
              "mooncake-master", "helper"}
# a placeholder: not shell's ${VAR} (written \${VAR} for OmegaConf), not upstream's own
# literal {{name}}
PLACEHOLDER = re.compile(r"(?<![$\\{])\{(\w+)\}(?!\})")
FIXTURE = ROOT / "tests/data/multinode_capture"


def _rows_with_deployments(path: Path):
    """(row index, row, its deployment less the importer's role fields, those fields by role
    name), read from the roles or from a deployments/<key>.yaml sidecar."""
    recipe = shipped_yaml(path)
    side = path.parent / "deployments" / path.name
    extra = shipped_yaml(side)["rows"] if side.exists() else {}
    for i, row in enumerate(recipe["search_space"]):
        if "deployment" in row:
            dep, inline = split_additions(row["deployment"])
            yield i, row, dep, inline or (extra.get(i) or {}).get("roles", {})


def _texts(role: dict) -> list[str]:
    return [*role["argv"], *role["env"].values(), *(role.get("files") or {}).values(),
            *(role.get("files") or {}).keys()]


def _check_deployment(where: str, row: dict, dep: dict, extra: dict) -> None:
    assert set(dep) - {"synthetic_acceptance_length"} == {
        "source", "image", "gpus_per_node", "nodes", "roles"}, where
    # the length upstream's injector forced: a field exactly where the source says it ran
    said = re.search(r"SYNTHETIC_ACCEPTANCE_LENGTH=([\d.]+) injected by", dep["source"])
    assert dep.get("synthetic_acceptance_length") == (float(said[1]) if said else None), where
    assert dep["gpus_per_node"] >= 1 and dep["nodes"] >= 1, where
    names = [r["name"] for r in dep["roles"]]
    assert len(names) == len(set(names)), f"{where}: role names {names}"
    gpus = {"prefill": 0, "decode": 0, "aggregated": 0}
    for r in dep["roles"]:
        at = f"{where} role {r['name']}"
        assert r["role"] in ROLE_KINDS, at
        assert r["instances"] >= 1 and r["nodes"] >= 1 and r["argv"], at
        more = extra.get(r["name"], {})
        vary = more.get("vary", {})
        for text in [*_texts(r), more.get("preamble", "")]:
            for ph in PLACEHOLDER.findall(text):
                ok = ph in CONTRACT | ADDED or re.fullmatch(r"node_\d+", ph) or ph in vary
                assert ok, f"{at}: placeholder {{{ph}}} in {text[:80]!r}"
                if re.fullmatch(r"node_\d+", ph):
                    assert int(ph[5:]) < dep["nodes"], at
        place = more.get("placement")
        assert place is not None and len(place) == r["instances"], at
        assert all(len(p["nodes"]) == r["nodes"] and max(p["nodes"]) < dep["nodes"]
                   for p in place), at
        # an MPI role (srun ntasks_per_node) is one step over all its nodes
        steps = 1 if "ntasks_per_node" in more.get("srun", {}) else \
            r["nodes"] * more.get("procs_per_node", 1)
        assert all(len(v) == r["instances"] and all(len(s) == steps for s in v)
                   for v in vary.values()), at
        if r["role"] in gpus:
            gpus[r["role"]] += r["instances"] * r["gpus"]
        assert not re.search(r"mn-capture-|srtnode\d|/work/|/home/", repr(r) + repr(more)), at
    pre = sum(p["workers"] * p["tp"] * p.get("pp", 1) * p.get("pcp", 1)
              for p in (row["prefill"],))
    dec = row["decode"]["workers"] * row["decode"]["tp"] * row["decode"].get("pp", 1) * \
        row["decode"].get("pcp", 1)
    if gpus["aggregated"]:
        assert gpus["aggregated"] == pre + dec and not gpus["prefill"] + gpus["decode"], where
    else:
        assert (gpus["prefill"], gpus["decode"]) == (pre, dec), f"{where}: {gpus}"
    # the HTTP API: a frontend or router, else (srtctl's frontend.type vllm) a worker
    assert any(r.get("port") for r in dep["roles"]
               if r["role"] in ("frontend", "router", "aggregated", "prefill", "decode")), where


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_deployments_are_well_formed(path: Path) -> None:
    for i, row, dep, extra in _rows_with_deployments(path):
        _check_deployment(f"{path.name} row {i}", row, dep, extra)


def test_the_import_report_names_every_row_not_captured() -> None:
    report = (ROOT / "recipes/recipe/multinode/IMPORT_REPORT.md").read_text()
    for path in SHIPPED:
        n = len(shipped_yaml(path)["search_space"])
        got = sum(1 for _ in _rows_with_deployments(path))
        assert f"`{path.stem}` (" in report and f"{got}/{n} rows captured" in report, path.stem
    assert "mn-capture-" not in report and "/work/" not in report


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                        "GIT_AUTHOR_DATE": "2026-08-01T00:00:00Z",
                        "GIT_COMMITTER_DATE": "2026-08-01T00:00:00Z", "PATH": "/usr/bin:/bin"})


TP2_DECODE = {"num-worker": 1, "tp": 2, "ep": 1, "dp-attn": False}


def _fixture_repos(tmp: Path, decode: dict | None = None, settings: tuple[str, ...] = (),
                   injector: str | None = None) -> tuple[Path, Path]:
    """An InferenceX-shaped repo with one multi-node key (launched by launch_gb200-nv.sh's
    dynamo-vllm/dsv4 branch: srt-slurm v1.0.31 with vllm/deepseek-v4 copied over) and an
    srt-slurm-shaped repo holding the stand-in srtctl at tag v1.0.31. The stand-in deploys
    decode as one instance on 2 GPUs; `decode` is the master row's decode pool, `settings`
    more of the row's additional-settings, `injector` the text of a stand-in
    runners/inject_synthetic_acceptance.py."""
    srt, ix = tmp / "srt", tmp / "ix"
    shutil.copytree(FIXTURE / "src", srt / "src")
    (srt / "recipes").mkdir()
    _git(srt, "init", "-q", "-b", "main")
    _git(srt, "add", "-A")
    _git(srt, "commit", "-qm", "srt")
    _git(srt, "tag", "v1.0.31")
    shutil.copytree(FIXTURE / "ix_recipes", ix / "benchmarks/multi_node/srt-slurm-recipes")
    entry = {"image": "example/image:1", "model": "org/model", "model-prefix": "dsv4",
             "runner": "cluster:gb200-nv", "precision": "fp4", "framework": "dynamo-vllm",
             "multinode": True, "disagg": True, "scenarios": {"fixed-seq-len": [{
                 "isl": 8192, "osl": 1024, "search-space": [{
                     "conc-list": [4],
                     "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": False,
                                 "additional-settings": [
                                     "CONFIG_FILE=recipes/vllm/deepseek-v4/tiny.yaml",
                                     *settings]},
                     "decode": decode or TP2_DECODE}]}]}}
    (ix / "configs").mkdir()
    (ix / "configs/nvidia-master.yaml").write_text(yaml.safe_dump({"tiny-key": entry}))
    (ix / "configs/amd-master.yaml").write_text("{}\n")
    (ix / "configs/runners.yaml").write_text("labels: {\"cluster:gb200-nv\": [gb200-nv_0]}\n")
    if injector:
        (ix / "runners/synthetic_injectors").mkdir(parents=True)
        (ix / "runners/synthetic_injectors/__init__.py").write_text("")
        (ix / "runners/inject_synthetic_acceptance.py").write_text(injector)
    _git(ix, "init", "-q", "-b", "main")
    _git(ix, "add", "-A")
    _git(ix, "commit", "-qm", "ix")
    return ix, srt


def test_the_capture_cli_reproduces_the_checked_in_capture(tmp_path: Path) -> None:
    ix, srt = _fixture_repos(tmp_path)
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "harness.catalog.multinode_capture", "--inferencex", str(ix),
         "--srt-slurm", str(srt), "--out", str(out), "--commit", "HEAD",
         "--python", sys.executable], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "1 rows captured, 0 not" in run.stdout
    [(_i, row, dep, extra)] = list(_rows_with_deployments(out / "tiny-key.yaml"))
    expected = yaml.safe_load((FIXTURE / "expected.yaml").read_text())
    assert dep["source"].startswith("NVIDIA/srt-slurm@") and "recipes/vllm/deepseek-v4/tiny" \
        in dep["source"] and "runners/launch_gb200-nv.sh@" in dep["source"]
    assert {**dep, "source": None} == expected["deployment"]
    assert extra == expected["additions"]
    _check_deployment("fixture", row, dep, extra)
    assert "1/1 rows captured" in (out / "IMPORT_REPORT.md").read_text()


def test_every_captured_process_renders_back_from_its_role(tmp_path: Path) -> None:
    """The stand-in srtctl's records, rebuilt from the role templates by the placement, the
    node ranks and the vary tables, are what srtctl started, argv and env alike."""
    from harness.catalog.multinode_capture import capture_in_tree
    from harness.catalog.multinode_roles import deployment

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE / "src", tree / "src")
    shutil.copytree(FIXTURE / "ix_recipes", tree / "recipes")
    cfg = "recipes/vllm/deepseek-v4/tiny.yaml"
    [cap] = capture_in_tree(tree, [cfg], "example/image:1", sys.executable, None, 2).values()
    assert isinstance(cap, dict), cap
    dep = deployment(cap, "fixture")
    want = sorted((r["nodelist"][0], r["command"], sorted(r["env_to_set"].items()))
                  for r in cap["records"] if r["context"].get("stage") == "worker")
    got = []
    for role in dep["roles"]:
        if role["role"] not in ("prefill", "decode"):
            continue
        per = role.get("procs_per_node", 1)
        for inst, place in enumerate(role["placement"]):
            nodes = [f"srtnode{n:03d}" for n in place["nodes"]]
            for step in range(role["nodes"] * per):
                rank, local = divmod(step, per)
                values = {"host": nodes[rank], "leader": nodes[0], "head": "srtnode000",
                          "node_rank": str(rank), "local_rank": str(local),
                          "instance": str(inst), "devices": place["devices"][step],
                          "model": "/model", "served_name": "org/model",
                          "launch_dir": cap["log_dir"],
                          **{k: v[inst][step] for k, v in role.get("vary", {}).items()}}

                def fill(t: str, values=values) -> str:
                    return PLACEHOLDER.sub(lambda m: values[m.group(1)], t)

                argv = [fill(a) for a in role["argv"]]
                got.append((nodes[rank], [a for a in argv if a != ""],
                            sorted((k, fill(v)) for k, v in role["env"].items())))
    assert sorted(got) == want


# --- a captured row's GPUs: every GPU srt-slurm deploys (harness/catalog/multinode_gpus.py) ---
