"""InferenceX's multi-node keys as attach recipes: srt-slurm (or upstream's AMD disagg
scripts) deploys the key; `engine=endpoint engine.url=... engine.deployment=<recipe>` measures
it with the key's identity, its concurrency list and GPU count (prefill + decode pools).

Read from the master configs themselves (configs/{nvidia,amd}-master.yaml, any commit):
`multinode: true` entries, rows `{spec-decoding?, conc-list, prefill: {num-worker, tp, ep,
dp-attn, pp?, dcp-size?, pcp-size?, additional-settings: [CONFIG_FILE=...]}, decode: {...}}`
(SemiAnalysisAI/InferenceX@843c6254). A pool's GPUs are workers x tp x pp x pcp: DCP splits the
KV over the TP ranks and EP/DP attention reuse them; InferenceX's per-GPU throughput divides by
PREFILL_GPUS + DECODE_GPUS (.github/workflows/benchmark-multinode-tmpl.yml@843c6254). A
captured row's pools are read as srt-slurm deploys them (harness/catalog/multinode_gpus.py:
vLLM data-parallel-attention pools are written with vLLM's per-rank tp upstream)."""

from __future__ import annotations

import re
from typing import Any

# The model recipe (recipes/model/<name>.yaml) of each InferenceX `model-prefix`.
MODEL_RECIPE = {"dsr1": "deepseek-r1", "dsv4": "deepseek-v4-pro", "glm5.1": "glm-5.1",
                "glm5.2": "glm-5.2", "kimik2.6": "kimi-k2.6", "kimik3": "kimi-k3",
                "minimaxm3": "minimax-m3", "qwen3.5": "qwen3.5-397b-a17b"}
# The engine behind a deployment's frontend, for its /metrics names (engine.family).
FAMILY = {"dynamo-trt": "trtllm", "dynamo-sglang": "sglang", "dynamo-vllm": "vllm",
          "sglang-disagg": "sglang", "atom-disagg": "atom", "llmd-vllm": "vllm", "vllm": "vllm",
          "sglang": "sglang", "trt": "trtllm", "atom": "atom"}
FIXED_SCENARIO = {(1024, 1024): "fixed-1k1k", (8192, 1024): "fixed-8k1k",
                  (1024, 8192): "fixed-1k8k"}
AGENTIC_SCENARIO = "agentic-agentx"


class CatalogError(ValueError):
    """A master entry this module cannot read, with the key and what is wrong."""


def chip_of(runner: str) -> str:
    """`cluster:gb200-nv`, `b200-multinode`, `mi355x-disagg` -> the chip recipe's name."""
    return runner.split(":", 1)[-1].split("-", 1)[0]


def scenario_rows(entry: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
    """(scenario name, search-space row) for every row of the key, in file order."""
    out: list[tuple[str, dict[str, Any]]] = []
    for kind, blocks in (entry.get("scenarios") or {}).items():
        for block in blocks or []:
            if kind == "fixed-seq-len":
                shape = (int(block["isl"]), int(block["osl"]))
                if shape not in FIXED_SCENARIO:
                    raise CatalogError(f"{key}: no scenario recipe for isl/osl {shape}")
                name = FIXED_SCENARIO[shape]
            elif kind == "agentic-coding":
                name = AGENTIC_SCENARIO
            else:
                raise CatalogError(f"{key}: unknown scenario kind {kind!r}")
            out += [(name, row) for row in block.get("search-space") or []]
    if not out:
        raise CatalogError(f"{key}: no search-space rows")
    return out


def pool(p: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"workers": int(p.get("num-worker", 1)), "tp": int(p["tp"]),
                           "ep": int(p.get("ep", 1)), "dp_attention": bool(p.get("dp-attn"))}
    for ours, theirs in (("pp", "pp"), ("dcp", "dcp-size"), ("pcp", "pcp-size")):
        if int(p.get(theirs, 1)) > 1:
            out[ours] = int(p[theirs])
    return out


def deploy_name(row: dict[str, Any]) -> str:
    """What deploys the row: srt-slurm's CONFIG_FILE, else (upstream's AMD disagg scripts)
    the row's settings, prefill's then decode's, as the workflow exports them, written
    NAME:VALUE joined by `/` so the name is one plain Hydra value
    (`engine.deployment=PREFILL_NODES:1/DECODE_NODES:2/DECODE_MTP_SIZE:0`)."""
    settings = [*(row["prefill"].get("additional-settings") or []),
                *(row["decode"].get("additional-settings") or [])]
    for s in settings:
        if s.startswith("CONFIG_FILE="):
            # srt-slurm's zip-override index `file.yaml:name[0]` as `name@0`: '[' would start
            # a list in a Hydra override
            return re.sub(r"\[(\d+)\]$", r"@\1", s.split("=", 1)[1])
    return "/".join(s.replace("=", ":", 1) for s in settings)


def mtp_depth(name: str) -> int | None:
    """Draft length in an srt-slurm recipe name (`..._mtp3.yaml`, `...mtp3_8.yaml`), or in
    the AMD scripts' DECODE_MTP_SIZE setting."""
    m = re.search(r"(?:_mtp|DECODE_MTP_SIZE:)(\d+)", name)
    return int(m.group(1)) if m else None


def attach_recipe(master_entry: dict[str, Any], key: str, commit: str,
                  master_path: str) -> dict[str, Any]:
    """The Hydra recipe (as a dict) that measures one multi-node key by attaching to it."""
    e = master_entry
    if not e.get("multinode"):
        raise CatalogError(f"{key}: not a multi-node key (multinode: {e.get('multinode')})")
    prefix = str(e["model-prefix"])
    if prefix not in MODEL_RECIPE:
        raise CatalogError(f"{key}: no model recipe for model-prefix {prefix!r}; add it to "
                           "harness/catalog/multinode.py MODEL_RECIPE")
    rows = scenario_rows(e, key)
    spec = any(str(r.get("spec-decoding", "none")) != "none" for _, r in rows)
    search: list[dict[str, Any]] = []
    for scenario, r in rows:
        if "prefill" not in r or "decode" not in r:
            raise CatalogError(f"{key}: a row without prefill/decode pools: {r}")
        pre, dec = pool(r["prefill"]), pool(r["decode"])
        conc = [int(c) for c in r.get("conc-list") or []]
        if not conc:
            raise CatalogError(f"{key}: a multi-node row without conc-list: {r}")
        row: dict[str, Any] = {"scenario": scenario, "prefill": pre, "decode": dec,
                               "tp": dec["tp"], "ep": dec["ep"],
                               "dp_attention": dec["dp_attention"], "concurrency": conc,
                               "deploy_recipe": deploy_name(r)}
        row_spec = str(r.get("spec-decoding", "none")) != "none"
        if spec and not row_spec:
            row["spec_decoding"] = False
        k = mtp_depth(row["deploy_recipe"]) if row_spec else None
        if k == 0:  # DECODE_MTP_SIZE=0 / _mtp0: this deployment drafts nothing
            row["spec_decoding"] = False
        elif k is not None:
            row["speculator_k"] = k
        if r.get("kv-offloading") not in (None, "none"):
            backend = (r.get("kv-offload-backend") or {})
            row["kv_offload"] = {"backend": str(backend.get("name", r["kv-offloading"])),
                                 **({"version": str(backend["version"])}
                                    if backend.get("version") else {})}
        search.append(row)
    scenario = search[0]["scenario"]
    return {
        "defaults": [{"override /model": MODEL_RECIPE[prefix]},
                     {"override /chip": chip_of(str(e["runner"]))},
                     {"override /engine": "endpoint"},
                     {"override /speculator": "mtp" if spec else "none"},
                     {"override /scenarios": scenario}],
        "precision": str(e["precision"]),
        "recipe_source": f"SemiAnalysisAI/InferenceX@{commit} {master_path} key {key} "
                         f"(multi-node: deployed with srt-slurm / upstream's disagg scripts; "
                         f"image {e.get('image')}, framework {e.get('framework')})",
        "engine": {"family": FAMILY.get(str(e.get("framework")))},
        "search_space": search,
    }


def escape_interpolation(value: Any) -> Any:
    """Captured shell text keeps its `${VAR}`: written `\\${VAR}` so OmegaConf reads it back
    as the literal `${VAR}` instead of resolving it as an interpolation."""
    if isinstance(value, str):
        return value.replace("${", "\\${")
    if isinstance(value, list):
        return [escape_interpolation(v) for v in value]
    if isinstance(value, dict):
        return {k: escape_interpolation(v) for k, v in value.items()}
    return value


# The importer's additions to the launch contract (docs/multinode.md "Multi-node keys: what
# is captured"), RoleLaunch fields since the launcher runs srtctl's placement.
ADDITIONS = ("placement", "procs_per_node", "vary", "preamble", "env_unset", "srun", "image")


def split_additions(dep: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(the deployment with RoleLaunch's fields only, {role name: its additions})."""
    roles, extra = [], {}
    for r in dep["roles"]:
        roles.append({k: v for k, v in r.items() if k not in ADDITIONS})
        more = {k: r[k] for k in ADDITIONS if k in r}
        if more:
            extra[r["name"]] = more
    return {**dep, "roles": roles}, extra


def write_attach_recipes(masters: dict[str, dict[str, Any]], commit: str, out_dir: str,
                         deployments: dict[tuple[str, int], dict[str, Any]] | None = None,
                         inline_additions: bool = True,
                         not_captured: dict[tuple[str, int], str] | None = None,
                         only: list[str] | None = None) -> list[str]:
    """Every multi-node key of the given masters ({master path: parsed yaml}) as
    <out_dir>/<key>.yaml; returns the keys written. `deployments` ({(key, row index):
    deployment block}, harness/catalog/multinode_capture.py) go into their rows, the roles
    whole (inline_additions) or, for a launch schema without the importer's fields, those
    fields in <out_dir>/deployments/<key>.yaml by row and role. A key with a captured row
    launches on Slurm by default (engine=multinode); a row without one says why
    (`not_captured`, from the importer's reasons). A captured row's pools count the GPUs its
    deployment takes (harness/catalog/multinode_gpus.py), with a comment above the row where
    that reading differs from the master row's text. `only`: write just these keys."""
    from pathlib import Path

    from harness.catalog.recipe_yaml import dump_recipe

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for path, master in masters.items():
        for key, entry in master.items():
            if isinstance(entry, dict) and entry.get("multinode") \
                    and (not only or key in only):
                recipe = attach_recipe(entry, key, commit, path)
                side: dict[int, dict[str, Any]] = {}
                notes: dict[int, str] = {}
                for i, row in enumerate(recipe["search_space"]):
                    if deployments and (key, i) in deployments:
                        dep, extra = deployments[(key, i)], {}
                        text = _read_as_deployed(row, dep)
                        if text:
                            notes[i] = text
                        if not inline_additions:
                            dep, extra = split_additions(dep)
                        row["deployment"] = escape_interpolation(dep)
                        if extra:
                            side[i] = {"deploy_recipe": row["deploy_recipe"], "roles": extra}
                    elif deployments is not None:
                        row["not_captured"] = (not_captured or {}).get(
                            (key, i), "not captured by the importer")
                sidecar = out / "deployments" / f"{key}.yaml"
                if side:
                    sidecar.parent.mkdir(exist_ok=True)
                    sidecar.write_text(dump_recipe(
                        {"key": key, "rows": side},
                        [f"InferenceX {key}: what each captured row's roles carry beyond the "
                         "launch schema (placement, vary, preamble, ...), by row index.",
                         "Not a recipe. Generated by harness/catalog/multinode_capture.py."]
                    ).replace("# @package _global_\n", ""))
                elif sidecar.exists():
                    sidecar.unlink()
                header = recipe_header(key, recipe)
                (out / f"{key}.yaml").write_text(
                    with_row_notes(dump_recipe(recipe, header), notes))
                written.append(key)
    return written


def _read_as_deployed(row: dict[str, Any], dep: dict[str, Any]) -> str | None:
    """Set the row's pools to the GPUs its deployment takes; the note saying what changed
    and what InferenceX divides by, or None where the master row already counts them."""
    from harness.catalog.multinode_gpus import note, read_pools
    from harness.catalog.multinode_template import NotCaptured

    try:
        pre, dec = read_pools(row["prefill"], row["decode"], dep)
    except NotCaptured:  # the importer refuses such a row; a hand-made one stays as it is
        return None
    text = note(row["prefill"], row["decode"], dep, row["scenario"] == AGENTIC_SCENARIO)
    row.update(prefill=pre, decode=dec, tp=dec["tp"], ep=dec["ep"],
               dp_attention=dec["dp_attention"])
    return text


def with_row_notes(text: str, notes: dict[int, str]) -> str:
    """The recipe text with a comment above search-space row i for each note (the rows are
    the block sequence under the last top-level key, `search_space:`)."""
    if not notes:
        return text
    out, row, inside = [], -1, False
    for line in text.splitlines(keepends=True):
        if line.startswith("search_space:"):
            inside = True
        elif inside and line.startswith("- "):
            row += 1
            if row in notes:
                out.append(f"# row {row}: {notes[row]}\n")
        out.append(line)
    return "".join(out)


def recipe_header(key: str, recipe: dict[str, Any]) -> list[str]:
    """The usage comment: launch on Slurm where a row carries its captured deployment (the
    recipe's engine is then multinode), attach with engine=endpoint always."""
    rows = recipe["search_space"]
    got = sum(1 for r in rows if r.get("deployment"))
    attach = (f"harness sweep recipe=multinode/{key} engine=endpoint engine.url=http://HOST:PORT"
              " engine.deployment=<the row's deploy_recipe>")
    if not got:
        recipe["defaults"][2] = {"override /engine": "endpoint"}
        lines = [f"InferenceX {key}: multi-node, attach to its deployment (no row's launch is "
                 "captured: each row's not_captured says why).", f"  {attach}"]
    else:
        recipe["defaults"][2] = {"override /engine": "multinode"}
        pick = "" if got == len(rows) else " engine.deployment=<a captured row's deploy_recipe>"
        lines = [f"InferenceX {key}: multi-node, launched on Slurm from each row's captured "
                 f"deployment ({got} of {len(rows)} rows; a row without one says why in "
                 "not_captured).",
                 f"  harness sweep recipe=multinode/{key} engine.slurm.partition=PARTITION "
                 f"engine.slurm.account=ACCOUNT{pick}",
                 "Attach to a deployment that is already up instead:", f"  {attach}"]
    return [*lines, "Generated by harness/catalog/multinode.py (rows' deployment blocks: "
            "harness/catalog/multinode_capture.py); do not edit by hand."]


def read_masters(git_dir: str, commit: str = "HEAD") -> tuple[str, dict[str, dict[str, Any]]]:
    """(full commit, {master path: parsed yaml}) from a checkout or bare clone of InferenceX."""
    import subprocess

    import yaml

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", git_dir, *args], check=True, capture_output=True,
                              text=True).stdout

    full = git("rev-parse", commit).strip()
    masters = {p: yaml.safe_load(git("show", f"{full}:{p}"))
               for p in ("configs/nvidia-master.yaml", "configs/amd-master.yaml")}
    return full, masters


if __name__ == "__main__":  # python -m harness.catalog.multinode GIT_DIR OUT_DIR [COMMIT]
    import sys

    commit_, masters_ = read_masters(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else "HEAD")
    keys = write_attach_recipes(masters_, commit_, sys.argv[2])
    print(f"{len(keys)} multi-node keys written to {sys.argv[2]} from {commit_}")
