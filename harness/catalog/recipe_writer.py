"""A key's captured launches (`harness catalog import`'s capture format) as one
Hydra recipe: the server command as `engine.argv_template`, the flags that differ between
launches as search-space rows, the script's exported environment, helpers (routers, daemons),
setup steps and KV offloading, with `recipe_source` naming upstream's commit, master, key and
script.

Exact by construction: a value becomes a placeholder only where the harness renders exactly the
captured text for it (its own rule for that placeholder, harness/engines/template.py), and only
after an option that means it (`--tensor-parallel-size 8` is {tp}, a literal 8 elsewhere stays
8); everything else is literal with its braces escaped. tests/catalog/test_catalog_render.py renders
every launch back through the engine adapter and compares it with the capture."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

import yaml

from harness.catalog.checkpoints import captured_model, precision_for
from harness.catalog.client_recipe import client_recipe
from harness.catalog.client_settings import client_settings
from harness.catalog.launch_files import row_files
from harness.catalog.local_paths import checkpoint_note, localize, shipped_local_paths
from harness.catalog.multinode import (
    AGENTIC_SCENARIO,
    FIXED_SCENARIO,
    MODEL_RECIPE,
    CatalogError,
    attach_recipe,
    chip_of,
)
from harness.catalog.port_template import PORT_SPAN, escape_braces, port_sub
from harness.engines.template import max_model_len
from harness.speculation.drafters import speculator_from_server_argv

ENGINE_OF = {"sglang": "sglang", "vllm": "vllm", "trt": "trtllm", "trtllm": "trtllm",
             "atom": "atom"}
# Options whose value a placeholder may stand for (upstream's spellings across engines).
PLACEHOLDER_FLAGS = {
    "tp": re.compile(r"^(--tensor-parallel-size|--tp|--tp-size|--tp_size|-tp)$"),
    "ep": re.compile(r"^(--ep|--ep-size|--ep_size|--expert-parallel-size)$"),
    "dp": re.compile(r"^(--dp|--dp-size|--data-parallel-size)$"),
    "conc": re.compile(r"^(--max-num-seqs|--max-running-requests|--max_batch_size|"
                       r"--cuda-graph-max-bs|--max-concurrency)$"),
    "max_model_len": re.compile(r"^(--max-model-len|--context-length|--max_seq_len)$"),
    "host": re.compile(r"^--host$"),
}
PORT_FLAG = re.compile(r"^-{1,2}[\w-]*port$")


def weights_of(c: Mapping[str, Any]) -> str:
    """Where the launch's server loads the weights: MODEL_PATH when the launcher set one (a
    cluster copy), else MODEL. That text is {model}; MODEL beside it (a served name) is
    literal."""
    e = c.get("env_in") or {}
    return str(e.get("MODEL_PATH") or e.get("MODEL") or "")


def launch_values(c: Mapping[str, Any]) -> dict[str, str]:
    """What the harness renders for each placeholder in this launch (harness/engines/
    template.py's rules), from the capture's own job."""
    e, job = c.get("env_in") or {}, c.get("job") or {}
    tp = int(job.get("tp", e.get("TP", 1)))
    dpa = str(job.get("dp-attn", e.get("DP_ATTENTION", "false"))).lower() == "true"
    isl, osl = int(c.get("isl") or 0), int(c.get("osl") or 0)
    return {"model": str(e.get("MODEL", "")), "port": str(e.get("PORT", "8888")),
            "tp": str(tp), "ep": str(job.get("ep", e.get("EP_SIZE", 1))),
            "dp": str(tp if dpa else 1), "conc": str(c["conc"]),
            "max_model_len": str(max_model_len(isl, osl)), "host": "0.0.0.0"}


def templatize(argv: list[str], values: Mapping[str, str], model_paths: set[str]) -> list[str]:
    """argv with placeholders where the harness would render the same text."""
    port = int(values["port"])
    out: list[str] = []
    prev = ""
    for tok in argv:
        flag, eq, val = (tok.partition("=") if tok.startswith("-") and "=" in tok
                         else ("", "", ""))
        name, value = (flag, val) if eq else (prev, tok)
        sub = None
        inside = next((value[len(m) + 1:] for m in model_paths
                       if m and value.startswith(m.rstrip("/") + "/")), None)
        if value in model_paths and value:
            sub = "{model}"
        elif inside:  # a file of the staged checkpoint: its directory as the engine sees it
            sub = "{model_dir}/" + escape_braces(inside)
        elif PORT_FLAG.match(name) and value.isdigit() and 0 <= int(value) - port <= PORT_SPAN:
            k = int(value) - port
            sub = "{port}" if k == 0 else f"{{port+{k}}}"
        else:
            for ph, rx in PLACEHOLDER_FLAGS.items():
                if rx.match(name) and value == values[ph]:
                    sub = "{" + ph + "}"
                    break
        if sub is not None:
            out.append(f"{escape_braces(flag)}={sub}" if eq else sub)
        else:
            out.append(port_sub(tok, port))
        prev = tok
    return out


def flag_groups(argv: list[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    """(program and positionals before the first option, [option with its values])."""
    i = 0
    while i < len(argv) and not _is_opt(argv[i]):
        i += 1
    groups: list[tuple[str, ...]] = []
    for tok in argv[i:]:
        if _is_opt(tok) or not groups:
            groups.append((tok,))
        else:
            groups[-1] = (*groups[-1], tok)
    return argv[:i], groups


def _is_opt(tok: str) -> bool:
    return tok.startswith("-") and not re.fullmatch(r"-\d[\d.]*", tok) and tok != "-"


def _common(lists: list[list[tuple[str, ...]]]) -> list[tuple[str, ...]]:
    """Groups in every list (as many times as in each), in the first list's order."""
    first, out = lists[0], []
    pools = [list(x) for x in lists[1:]]
    for g in first:
        if all(g in p for p in pools):
            out.append(g)
            for p in pools:
                p.remove(g)
    return out


def _minus(groups: list[tuple[str, ...]], common: list[tuple[str, ...]]) -> list[str]:
    left = list(groups)
    for g in common:
        left.remove(g)
    return [t for g in left for t in g]


def _files(c: Mapping[str, Any], tpl: list[str], engine: str
           ) -> tuple[list[str], dict[str, Any] | None]:
    """TensorRT-LLM's extra-options YAML (the one file a server reads that the schema holds)
    as extra_options, its path in argv (full, or relative to the script's /workspace cwd, as a
    value or `--flag=path`) as {extra_options}. Other files the server reads (a chat template
    of upstream's checkout) keep their literal path: `harness catalog show` lists them."""
    files = (c.get("server") or {}).get("files") or {}
    opts = None
    for path, text in files.items():
        names = {escape_braces(path), escape_braces(path.removeprefix("/workspace/"))}
        hits = [i for i, t in enumerate(tpl) if t in names or t.partition("=")[2] in names]
        if engine != "trtllm" or not hits or not path.endswith((".yml", ".yaml")):
            continue
        opts = yaml.safe_load(text) or {}
        for i in hits:
            flag, eq, _ = tpl[i].partition("=")
            tpl[i] = f"{flag}={{extra_options}}" if eq and tpl[i] not in names \
                else "{extra_options}"
    return tpl, opts


# Setup steps that serve upstream's client or fetch weights and traces, which the harness does
# itself (its own client; weights from the HF cache): not the server's, so not in a recipe.
def server_setup(c: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for s in c.get("setup") or []:
        argv = [str(a) for a in s["argv"]]
        if argv[:1] == ["hf"] or argv[:2] == ["uv", "venv"] or any(
                "/workspace/utils/" in a or a.startswith("aiperf") for a in argv):
            continue
        out.append({"kind": str(s.get("kind", "command")), "argv": argv})
    return out


def _helpers(c: Mapping[str, Any], values: Mapping[str, str], server_offset: int
             ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    port = int(values["port"])
    for h in c.get("helpers") or []:
        seen = sum(1 for o in out if o["name"].split("#")[0] == str(h["name"]))
        argv = templatize(list(h["argv"]), values, set())
        offset = next((int(b) - port for a, b in itertools.pairwise(h["argv"])
                       if a in ("--port", "-port") and b.isdigit()), 0)
        router = "router" in str(h["name"])
        name = str(h["name"]) + (f"#{seen + 1}" if seen else "")
        out.append({"name": name, "role": "router" if router else "daemon",
                    "argv": argv, "env": {str(k): str(v) for k, v in (h.get("env") or {}).items()},
                    "port_offset": offset, "health_path": "/health" if router else None,
                    "fronts": router and offset == 0 and server_offset != 0})
    return out


def _server_offset(argv: list[str], port: int) -> int:
    for a, b in itertools.pairwise(argv):
        if PORT_FLAG.match(a) and b.isdigit() and 0 <= int(b) - port <= PORT_SPAN:
            return int(b) - port
    for a in argv:
        m = re.match(r"^-{1,2}[\w-]*port=(\d+)$", a)
        if m:
            return int(m.group(1)) - port
    return 0


def _kv(job: Mapping[str, Any], gpus: int) -> dict[str, Any] | None:
    if str(job.get("kv-offloading", "none")) in ("none", ""):
        return None
    backend = job.get("kv-offload-backend") or {}
    name = backend.get("name") if isinstance(backend, dict) else str(backend)
    out: dict[str, Any] = {"backend": str(name)}
    if isinstance(backend, dict) and backend.get("version"):
        out["version"] = str(backend["version"])
    if job.get("total-cpu-dram-gb"):
        out["dram_gb_per_rank"] = float(job["total-cpu-dram-gb"]) / max(1, gpus)
    return out


def _scenario(key: str, ok: list[dict]) -> str:
    kinds = {c["scenario"] for c in ok}
    if len(kinds) > 1:
        raise CatalogError(f"{key}: launches of several scenario kinds {sorted(kinds)}")
    if kinds == {"agentic-coding"}:
        return AGENTIC_SCENARIO
    shapes = {(c.get("isl"), c.get("osl")) for c in ok}
    if len(shapes) != 1 or next(iter(shapes)) not in FIXED_SCENARIO:
        raise CatalogError(f"{key}: fixed-sequence shapes {sorted(shapes)} are not one scenario")
    return FIXED_SCENARIO[next(iter(shapes))]


def usable(c: dict) -> bool:
    """A launch whose server command was captured: every captured one, and one where only
    upstream's client failed after the server started (qwen3.5-fp8-mi325x-sglang-mtp at
    843c6254: its script passes a stray EP_SIZE to its client helper, which stops; our client
    replaces upstream's, so the server command is all the recipe needs)."""
    server = c.get("server") or {}
    if not server.get("argv"):
        return False
    return c.get("status") == "ok" or (c.get("client") is None
                                        and "started no client" in str(c.get("reason")))


def _drafter(c: dict, engine: str) -> dict[str, Any] | None:
    """What the captured server command drafts with (harness/speculation/drafters.py), None when it
    runs no speculation or names an engine the reader does not know."""
    server = c.get("server") or {}
    env = {**(c.get("env_in") or {}), **(server.get("env_added") or server.get("env") or {})}
    try:
        return speculator_from_server_argv(engine, list(server.get("argv") or []),
                                           {str(k): str(v) for k, v in env.items()},
                                           server.get("files") or {})
    except ValueError:
        return None


def _speculator_node(d: dict[str, Any]) -> dict[str, Any]:
    """The recipe's speculator settings as the command runs them: the harness labels, looks up
    and verifies acceptance for this drafter, k and sample method (not the recipe default)."""
    node: dict[str, Any] = {"k": int(d["k"])}
    if d.get("draft_model"):
        node["draft_model"] = d["draft_model"]
    if d.get("sample_method"):
        node["sample_method"] = d["sample_method"]
    return node


def _launch_template(c: dict, engine: str) -> dict[str, Any]:
    """One capture templated: its argv, TRT YAML, placeholder values, port offset, env."""
    values = launch_values(c)
    argv = list(c["server"]["argv"])
    tpl, opts = _files(c, templatize(argv, values, {weights_of(c)}), engine)
    env = c["server"].get("env_added") or c["server"].get("env") or {}
    return {"c": c, "tpl": tpl, "opts": opts, "values": values,
            "offset": _server_offset(argv, int(values["port"])),
            "env": {str(k): str(v) for k, v in env.items()}}


def _row(p: dict[str, Any], extra: list[str], env_common: dict[str, str], spec_off: bool,
         scenario: str | None, common_setup: list[dict[str, Any]]) -> dict[str, Any]:
    """A launch's search-space row (its concurrency added by the caller)."""
    c, job = p["c"], p["c"].get("job") or {}
    tp = int(job.get("tp", 1))
    pcp, dcp = int(job.get("pcp-size", 1) or 1), int(job.get("dcp-size", 1) or 1)
    env = {k: v for k, v in p["env"].items() if k not in env_common}
    optional = {"pcp": pcp if pcp > 1 else None, "dcp": dcp if dcp > 1 else None,
                "spec_decoding": False if spec_off else None, "scenario": scenario,
                "extra_args": extra or None, "env": env or None,
                "extra_options": p["opts"], "kv_offload": _kv(job, tp * pcp),
                "helpers": _helpers(c, p["values"], p["offset"]) or None,
                "port_offset": p["offset"] or None,
                "correlation_headers": client_settings(c.get("client"))[0].get(
                    "correlation_headers") or None,
                "setup": server_setup(c) if server_setup(c) != common_setup else None,
                "files": row_files(c)}
    return {"tp": tp, "ep": int(job.get("ep", 1)), "dp_attention": bool(job.get("dp-attn")),
            **{k: v for k, v in optional.items() if v is not None}}


def catalog_to_recipe(captures: list[dict], master_entry: dict, key: str, commit: str
                      ) -> dict[str, Any]:
    """The recipe of one key from its captured launches (multi-node: the attach recipe)."""
    e = master_entry
    if e.get("multinode"):
        master = next((c["master"] for c in captures if c.get("master")),
                      "configs/amd-master.yaml" if "mi3" in str(e.get("runner"))
                      else "configs/nvidia-master.yaml")
        return attach_recipe(e, key, commit, master)
    ok = [localize(c) for c in captures if usable(c)]
    if not ok:
        raise CatalogError(f"{key}: no launch was captured")
    engine = ENGINE_OF.get(str(e.get("framework")))
    if engine is None:
        raise CatalogError(f"{key}: no engine adapter for framework {e.get('framework')!r}")
    scenario = _scenario(key, ok)
    per = [_launch_template(c, engine) for c in ok]
    split = [flag_groups(p["tpl"]) for p in per]
    if len({tuple(s[0]) for s in split}) != 1:
        raise CatalogError(f"{key}: launches run different programs "
                           f"{sorted({tuple(s[0]) for s in split})}")
    common = _common([s[1] for s in split])
    env_common = {k: v for k, v in per[0]["env"].items()
                  if all(p["env"].get(k) == v for p in per)}
    spec_rows = [str((p["c"].get("job") or {}).get("spec-decoding", "none")) for p in per]
    drafts = [_drafter(p["c"], engine) for p in per]
    first = next((d for d in drafts if d), None)
    spec = any(s != "none" for s in spec_rows) or first is not None
    setups = [server_setup(p["c"]) for p in per]
    common_setup = setups[0] if all(s == setups[0] for s in setups) else []
    rows: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for p, (_, groups), sd, d in zip(per, split, spec_rows, drafts, strict=True):
        row = _row(p, _minus(groups, common), env_common, spec and sd == "none",
                   scenario if scenario == AGENTIC_SCENARIO else None, common_setup)
        if d and first and d["k"] != first["k"]:  # k chosen per concurrency (DSpark keys)
            row["speculator_k"] = d["k"]
        ident = repr(sorted(row.items()))
        if ident not in index:
            index[ident] = len(rows)
            rows.append({**row, "concurrency": []})
        rows[index[ident]]["concurrency"].append(int(p["c"]["conc"]))
    engine_node: dict[str, Any] = {"image": e.get("image"), "env": env_common, "argv_template":
                                   [*split[0][0], *(t for g in common for t in g)]}
    if common_setup:
        engine_node["setup"] = common_setup
    doc = _recipe(e, key, commit, ok, engine, scenario, spec, first, engine_node, rows)
    left = sorted(set(shipped_local_paths(doc)))
    if left:
        raise CatalogError(f"{key}: its launch names paths of the machine it ran on "
                           f"({', '.join(left)}) with no Hugging Face id to stand for them"
                           f"{checkpoint_note(left, captures)}; no recipe is written")
    return doc


def _recipe(e: dict, key: str, commit: str, ok: list[dict], engine: str, scenario: str,
            spec: bool, first: dict[str, Any] | None, engine_node: dict[str, Any],
            rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The recipe document: defaults, provenance, engine node and rows."""
    scripts = sorted({str(c.get("script")) for c in ok})
    prefix = str(e.get("model-prefix"))
    model = MODEL_RECIPE.get(prefix, prefix)
    precision = precision_for(key, model, captured_model(key, ok, str(e.get("model") or "")),
                              str(e.get("precision")))
    return {
        "defaults": [{"override /model": model},
                     {"override /chip": chip_of(str(e.get("runner")))},
                     {"override /engine": engine},
                     {"override /speculator": first["method"] if first else
                      ("mtp" if spec else "none")},
                     {"override /scenarios": scenario}],
        "precision": precision,
        **({"speculator": _speculator_node(first)} if first else {}),
        "recipe_source": f"SemiAnalysisAI/InferenceX@{commit} {ok[0].get('master')} key {key} "
                         f"script {' '.join(scripts)}",
        "relaunch_per_concurrency": True,
        **client_recipe(key, ok),
        "engine": engine_node,
        "search_space": rows,
    }
