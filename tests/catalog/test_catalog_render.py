"""Every launch of a catalog recipe, rendered through its engine adapter, against the launch
upstream's script ran (its capture): argv as flag groups (program and positionals in order,
options as a set of flag groups; a file path compared by the file's content), environment,
files (TensorRT-LLM's YAML by its keys; a file the script writes under /workspace/results, such
as Mooncake's config, byte for byte at the path the adapter mounts it), helpers and setup
steps. For the recipe writer's fixtures (tests/catalog_capture_
fixtures.py) and for every shipped capture in recipes/recipe/captured/ (the importer's).

What the adapters add on purpose, and so is taken out before comparing: SGLang's
`--enable-metrics` (the counters that verify acceptance) and TensorRT-LLM's metrics keys in its
YAML (harness/engines/trtllm.py METRICS_OPTIONS). A path the runner staged a checkpoint or draft
at is compared as the repository it holds (harness/catalog/local_paths.py localize), and a file
inside the staged checkpoint as that file of the checkpoint's snapshot ({model_dir})."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.catalog.client_recipe import corpus_of
from harness.catalog.client_settings import client_settings
from harness.catalog.compare import argv_changes, env_changes
from harness.catalog.diff import diff_text
from harness.catalog.local_paths import localize
from harness.catalog.recipe_writer import (
    catalog_to_recipe,
    server_setup,
    usable,
    weights_of,
)
from harness.catalog.render import compose_recipe, render_launches
from harness.engines.trtllm import METRICS_OPTIONS
from harness.engines.weights import model_dir
from harness.engines.workspace import FILE_PREFIX, file_mounts
from tests.catalog.catalog_capture_fixtures import COMMIT, FIXTURES, as_capture_file

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "recipe"
CAPTURED = RECIPES / "captured"
SHIPPED = sorted(p for p in CAPTURED.glob("*.json")) if CAPTURED.is_dir() else []
ADDED_FLAGS = {"sglang": [("--enable-metrics",)]}


def _ident(tp: Any, ep: Any, dpa: Any, conc: Any, kv: Any = "none", spec: Any = True
           ) -> tuple:
    """A launch's identity: a key may run one topology and concurrency twice, with and
    without KV offloading or speculation (InferenceX's agentic hicache keys)."""
    return int(tp), int(ep), str(dpa).lower() == "true", int(conc), str(kv), bool(spec)


def _cap_kv(job: dict) -> str:
    if str(job.get("kv-offloading", "none")) in ("none", ""):
        return "none"
    b = job.get("kv-offload-backend") or {}
    return str(b.get("name") if isinstance(b, dict) else b)


def _strip_added(engine: str, argv: list[str], captured: list[str]) -> list[str]:
    out = list(argv)
    for (flag,) in ADDED_FLAGS.get(engine, []):
        if flag in out and flag not in captured:
            out.remove(flag)
    return out


def compare(entry: dict, launches: list[dict], key: str, recipe: dict | None = None
            ) -> list[str]:
    """Every difference between the recipe's rendered launches and the captures (the recipe:
    the shipped file when given, else written from the captures)."""
    recipe = recipe if recipe is not None else catalog_to_recipe(launches, entry, key, COMMIT)
    ports = {int((c.get("env_in") or {}).get("PORT", 8888)) for c in launches}
    assert len(ports) == 1, f"{key}: launches on several job ports {ports}"
    sc = compose_recipe(recipe)
    rendered = render_launches(sc, port=ports.pop())
    # a file inside the staged checkpoint (`$MODEL_PATH/chat_template.jinja`) is that file of
    # the checkpoint's snapshot in the HF cache the engine's container mounts
    inside = model_dir(sc, sc.model.checkpoints.get(sc.precision or sc.model.default_precision,
                                                    sc.model.hf_id))
    by_id = {}
    for r in rendered:
        t = r["topology"]
        for c in r["concurrency"]:
            by_id[_ident(t["tp"], t["ep"], t["dp_attention"], c, r["kv_offload"]["backend"],
                         r["speculator"]["method"] != "none")] = r
    problems: list[str] = []
    ok = [_as_hf_id(localize(c), str(entry.get("model") or ""), inside)
          for c in launches if usable(c)]
    for cap in ok:
        job = cap.get("job") or {}
        lid = _ident(job.get("tp", 1), job.get("ep", 1), job.get("dp-attn", False), cap["conc"],
                     _cap_kv(job), str(job.get("spec-decoding", "none")) != "none")
        r = by_id.get(lid)
        if r is None:
            problems.append(f"{key} {lid}: no launch of the recipe")
            continue
        srv = cap["server"]
        argv = _strip_added(r["engine"], r["argv"], srv["argv"])
        # a checkout file is the same file on both sides: engine.workspace mounts the
        # recipe's commit at /workspace, where upstream's container has it
        checkout = {p: t for p, t in (srv.get("files") or {}).items()
                    if p.startswith("/workspace/")}
        problems += [f"{key} {lid} argv {x}" for x in
                     argv_changes(srv["argv"], argv, srv.get("files") or {},
                                  {**checkout, **r["files"]})]
        problems += [f"{key} {lid} env {x}" for x in
                     env_changes(srv.get("env_added") or {}, r["env"])]
        want_files = [{k: v for k, v in (yaml.safe_load(t) or {}).items()
                       if k not in METRICS_OPTIONS}
                      for p, t in (srv.get("files") or {}).items()
                      if r["engine"] == "trtllm" and p.endswith((".yml", ".yaml"))]
        got_files = [{k: v for k, v in (yaml.safe_load(t) or {}).items()
                      if k not in METRICS_OPTIONS} for n, t in r["files"].items()
                     if not n.startswith(FILE_PREFIX)]
        if want_files != got_files:
            problems.append(f"{key} {lid} files {want_files} != {got_files}")
        # what the script wrote under results/ (Mooncake's config), byte for byte, at the
        # path the adapter mounts it
        written = {p: t for p, t in (srv.get("files") or {}).items()
                   if p.startswith("/workspace/results/")}
        mounted = {inside: r["files"][host.rsplit("/", 1)[1]]
                   for host, inside in file_mounts(r["files"], "")}
        if written != mounted:
            problems.append(f"{key} {lid} written files {written} != {mounted}")
        want_h = [(h["name"], h["argv"]) for h in cap.get("helpers") or []]
        got_h = [(h["name"].split("#")[0], h["argv"]) for h in r["helpers"]]
        if want_h != got_h:
            problems.append(f"{key} {lid} helpers {want_h} != {got_h}")
        problems += [f"{key} {lid} {x}" for x in client_problems(cap, r["client"])]
        want_s = [s["argv"] for s in server_setup(cap)]
        if want_s != [s["argv"] for s in r["setup"]]:
            problems.append(f"{key} {lid} setup {want_s} != {r['setup']}")
    if len(rendered_points(rendered)) != len(ok):
        problems.append(f"{key}: {len(rendered_points(rendered))} launches, {len(ok)} captured")
    return problems


def _aiperf_option(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def client_problems(cap: dict, client: dict) -> list[str]:
    """Every difference between the captured client call and the client settings the sweep
    renders for that launch (harness/catalog/client_view.py)."""
    s, _ = client_settings(cap.get("client"))
    if not s or ("dataset" in s and not s["dataset"]):  # the writer's fixtures: a bare call
        return []
    want: dict[str, Any]
    if "dataset" in s:
        argv = list(cap["client"]["argv"])
        entries = _aiperf_option(argv, "--num-dataset-entries")
        threshold = _aiperf_option(argv, "--failed-request-threshold")
        want = {"dataset": corpus_of(cap), "seed": s["random_seed"] or None,
                "duration_s": s["duration_s"],
                "warmup_requests_per_lane": s["warmup_requests_per_lane"],
                "start_min_ratio": s["start_min_ratio"], "start_max_ratio": s["start_max_ratio"],
                "tree_cap_s": s["tree_cap_s"],
                "correlation_headers": s.get("correlation_headers", [])}
        if entries is not None:
            want["max_entries"] = int(entries)
        if threshold is not None:
            want["max_failed_share"] = float(threshold)
        got = {**client, "dataset": client["dataset"]["id"],
               "max_entries": client["dataset"]["max_entries"]}
    else:
        want = {k: s[k] for k in ("isl", "osl", "range_ratio", "requests_per_conc",
                                  "warmup_per_conc", "chat_template", "api")}
        got = client
    return [f"client {k}: upstream {v!r}, rendered {got.get(k)!r}" for k, v in want.items()
            if got.get(k) != v]


def _as_hf_id(c: dict, entry_model: str, inside: str) -> dict:
    """The capture with the path its server loads the checkpoint from (a runner's cluster copy,
    MODEL_PATH) written as the checkpoint it is a copy of (the job's `model:`), so the recipe's
    rendered {model} (the model recipe's checkpoint for the recipe's precision) must be that
    very checkpoint: the named difference "a staged path shown as its HF id", and no other.
    A file under that path is the same file under `inside`, the directory the rendered
    {model_dir} names (the snapshot of the recipe's checkpoint as the engine sees it)."""
    path, model = weights_of(c), str((c.get("job") or {}).get("model") or entry_model)
    if not path or not model or path == model:
        return c
    below = path.rstrip("/") + "/"

    def one(a: str) -> str:
        return (model if a == path else inside + "/" + a[len(below):] if a.startswith(below)
                else a)

    srv = dict(c["server"])
    srv["argv"] = [f"{a.partition('=')[0]}={one(a.partition('=')[2])}" if a.startswith("-")
                   and "=" in a else one(a) for a in srv["argv"]]
    srv["env_added"] = {k: model if v == path else v
                        for k, v in (srv.get("env_added") or {}).items()}
    return {**c, "server": srv}


def rendered_points(rendered: list[dict]) -> list[int]:
    return [c for r in rendered for c in r["concurrency"]]


@pytest.mark.parametrize(("key", "wrong"), [("dsr1-fp4-mi355x-atom", "fp4"),
                                            ("qwen3.5-fp4-b300-sglang", "fp4")])
def test_a_recipe_loading_another_checkpoint_fails(key: str, wrong: str) -> None:
    """The comparison sees the checkpoint a sweep would load: the master's precision word
    (`fp4`, NVIDIA's checkpoint) in place of the one the jobs ran is a difference."""
    doc = json.loads((CAPTURED / f"{key}.json").read_text())
    recipe = yaml.safe_load((RECIPES / f"{key}.yaml").read_text())
    assert compare(doc["entry"], doc["launches"], key, recipe) == []
    problems = compare(doc["entry"], doc["launches"], key, {**recipe, "precision": wrong})
    assert problems and all(doc["entry"]["model"] in p or "NVFP4" in p or "FP4-V2" in p
                            for p in problems if " argv " in p)
    assert any(" argv - " in p and doc["entry"]["model"] in p for p in problems)


@pytest.mark.parametrize("key", sorted(FIXTURES))
def test_fixture_recipes_render_their_captures(key: str) -> None:
    entry, launches = FIXTURES[key]()
    assert compare(entry, launches, key) == []


def test_a_changed_flag_is_found() -> None:
    """The comparison can fail: a launch whose captured command differs from the recipe's."""
    entry, launches = FIXTURES["dsr1-fp8-h200-sglang"]()
    recipe_from = [json.loads(json.dumps(c)) for c in launches]
    other = json.loads(json.dumps(launches))
    other[1]["server"]["argv"][other[1]["server"]["argv"].index("0.82")] = "0.85"
    recipe = catalog_to_recipe(recipe_from, entry, "dsr1-fp8-h200-sglang", COMMIT)
    rendered = render_launches(compose_recipe(recipe))
    argv = _strip_added("sglang", rendered[1]["argv"], other[1]["server"]["argv"])
    assert argv_changes(other[1]["server"]["argv"], argv) == [
        "- --mem-fraction-static 0.85", "+ --mem-fraction-static 0.82"]


def test_the_agentic_recipe_names_offload_router_and_setup() -> None:
    entry, launches = FIXTURES["dsv4-fp4-b200-vllm-agentic-mtp"]()
    recipe = catalog_to_recipe(launches, entry, "dsv4-fp4-b200-vllm-agentic-mtp", COMMIT)
    assert recipe["recipe_source"] == (
        f"SemiAnalysisAI/InferenceX@{COMMIT} configs/nvidia-master.yaml key "
        "dsv4-fp4-b200-vllm-agentic-mtp script "
        "benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh")
    *tp_rows, dep_row = recipe["search_space"]  # TP rows split: --max-num-seqs is 2 x CONC
    assert [r["concurrency"] for r in tp_rows] == [[1], [4]] and dep_row["concurrency"] == [32]
    assert all(r["scenario"] == "agentic-agentx" for r in recipe["search_space"])
    assert dep_row["kv_offload"] == {"backend": "vllm-simple", "dram_gb_per_rank": 200.0}
    assert dep_row["port_offset"] == 1
    [router] = dep_row["helpers"]
    assert router["fronts"] and router["argv"][router["argv"].index("--port") + 1] == "{port}"
    assert "http://localhost:{port+1}" in router["argv"]
    assert "{port+1}" in dep_row["extra_args"]  # the engine behind the router
    assert dep_row["setup"] == [{"kind": "install",
                                 "argv": ["pip", "install", "--quiet", "vllm-router==0.1.14"]}]


def test_diff_names_changed_flags_env_and_keys(tmp_path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    for key in FIXTURES:
        (old / f"{key}.json").write_text(as_capture_file(key))
    doc = json.loads(as_capture_file("dsr1-fp8-h200-sglang"))
    srv = doc["launches"][0]["server"]
    srv["argv"][srv["argv"].index("0.82")] = "0.9"
    srv["env_added"]["NEW_VAR"] = "1"
    (new / "dsr1-fp8-h200-sglang.json").write_text(json.dumps(doc))
    (new / "dsr1-fp4-b200-trt.json").write_text(as_capture_file("dsr1-fp4-b200-trt"))
    text, changed = diff_text(old, new)
    assert changed
    assert "- key dsv4-fp4-b200-vllm-agentic-mtp" in text
    assert "argv - --mem-fraction-static 0.82" in text
    assert "argv + --mem-fraction-static 0.9" in text
    assert "env + NEW_VAR=1" in text
    assert "dsr1-fp4-b200-trt" not in text  # unchanged
    assert diff_text(old, old) == (f"commit {COMMIT} -> {COMMIT}\nno key, launch, argv, "
                                   "environment or file changed", False)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_capture_renders_back(path: Path) -> None:
    doc = json.loads(path.read_text())
    if doc.get("kind") == "multinode" or not any(usable(c) for c in doc.get("launches") or []):
        pytest.skip(f"{doc['key']}: {doc.get('reason') or 'nothing captured'}")
    shipped = RECIPES / f"{doc['key']}.yaml"
    assert shipped.is_file(), f"{shipped}: no recipe for a captured key; run harness catalog import"
    recipe = yaml.safe_load(shipped.read_text())
    # the shipped file is what the importer writes from these captures (nothing hand-edited)
    assert recipe == catalog_to_recipe(doc["launches"], doc["entry"], doc["key"], doc["commit"])
    assert compare(doc["entry"], doc["launches"], doc["key"], recipe) == []


@pytest.mark.slow  # three compositions of shipped recipes
def test_show_prints_every_launch_and_its_json_is_stable() -> None:
    from harness.catalog.show import show

    text = show("dsr1-fp8-mi300x-sglang", as_json=False)
    first = show("dsr1-fp8-mi300x-sglang", as_json=True)
    data = json.loads(first)
    assert first == show("dsr1-fp8-mi300x-sglang", as_json=True)
    assert data["launches"] and all(ln["argv"] and "concurrency" in ln
                                    for ln in data["launches"])
    assert len(text.splitlines()) > len(data["launches"]) and "argv: " in text
    mn = json.loads(show("dsv4-fp4-mi355x-sglang-disagg", as_json=True))
    assert {ln["deployment"] for ln in mn["launches"]} and all(
        ln["gpus"] == ln["topology"]["prefill_gpus"] + ln["topology"]["decode_gpus"]
        for ln in mn["launches"])


def test_show_says_where_each_workspace_file_comes_from() -> None:
    """/workspace is upstream's checkout inside its container: a chat template or patch script
    there is the checkout's file at the recipe's commit (the `..` resolved); results/, the GPU
    monitor's csv and files the recipe writes are the job's outputs."""
    from harness.catalog.show import workspace_files

    launch = {"argv": ["sglang", "--chat-template",
                       "/workspace/benchmarks/x/../chat_templates/t.jinja",
                       "--cfg", "/workspace/results/m.json"],
              "env": {"GPU_METRICS_CSV": "/workspace/gpu_metrics.csv"},
              "files": {}, "helpers": [],
              "setup": [{"kind": "patch", "argv": ["bash", "/workspace/benchmarks/p.sh"]}]}
    got = {f["path"]: (f["kind"], f["source"]) for f in workspace_files([launch], "o/r@abc")}
    assert got == {
        "/workspace/benchmarks/x/../chat_templates/t.jinja":
            ("checkout", "o/r@abc:benchmarks/chat_templates/t.jinja"),
        "/workspace/benchmarks/p.sh": ("checkout", "o/r@abc:benchmarks/p.sh"),
        "/workspace/results/m.json": ("output", "written by the job"),
        "/workspace/gpu_metrics.csv": ("output", "written by the job")}


def test_a_command_reading_upstreams_checkout_needs_engine_workspace(tmp_path) -> None:
    """DeepSeek-V4's agentic SGLang command reads its chat template from /workspace (upstream's
    checkout in the container): the launch is refused without engine.workspace, and with it the
    checkout is mounted read-only there, the job's results/ writable beside it."""
    from harness.config.errors import ConfigError
    from harness.engines.workspace import check_workspace, checkout_files

    recipe = yaml.safe_load((RECIPES / "dsv4-fp4-b200-sglang-agentic-hicache-mtp.yaml")
                            .read_text())
    sc = compose_recipe(recipe, ["concurrency=[1]"])
    files = checkout_files(sc)
    assert files and all(f.endswith("deepseek_v4_thinking.jinja") for f in files), files
    with pytest.raises(ConfigError, match=r"engine\.workspace"):
        check_workspace(sc, lambda key: "recipe")
    checkout = tmp_path / "InferenceX"
    checkout.mkdir()
    sc = compose_recipe(recipe, ["concurrency=[1]", f"engine.workspace={checkout}"])
    check_workspace(sc, lambda key: "recipe")
    from harness.engines.registry import make_adapter

    argv = make_adapter(sc).launch_plan(8888, 1).argv
    assert f"{checkout}:/workspace:ro" in argv and "{launch_dir}/results:/workspace/results" in argv
    plain = yaml.safe_load((RECIPES / "dsr1-fp4-b200-sglang.yaml").read_text())
    assert checkout_files(compose_recipe(plain, ["concurrency=[4]"])) == []
