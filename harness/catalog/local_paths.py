"""Paths a capture holds that belong to the machine it ran on, not to upstream's command.

A runner script stages a checkpoint or draft on its cluster (`hf download REPO --local-dir
/lustre/fsw/.../NAME`) or resolves the HF cache's snapshot (`hf download REPO` prints
`.../models--org--name/snapshots/<rev>`; under the capture's stand-in that revision is
`0000000000`), then serves that path. What runs is REPO: the harness names it by its HF id and
the engine loads it from the cache the container mounts. `localize` rewrites each such path
(whole, as an argument, an environment value or a value in a file the server reads) to its
repository; `shipped_local_paths` finds any that is left (a file inside a staged checkpoint has
no HF-id spelling: the writer names one in the server's command as {model_dir}/NAME), and the
writer refuses the key."""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Mapping
from typing import Any

# Machine paths: runner clusters (configs/runners.yaml@843c6254 nodes mount /lustre,
# /scratch and /data/models), the HF cache the launchers mount, and the import sandbox's
# own directories.
LOCAL = re.compile(r"(/lustre/|/scratch/|/data/models/|/mnt/hf_hub_cache|/tmp/ix-capture-|"
                   r"/tmp/ix-standins-|/snapshots/0{10}\b)\S*")


def staged(c: Mapping[str, Any]) -> dict[str, str]:
    """local path -> HF repository, from the launch's `hf download` steps (and the snapshot
    path the stand-in prints for `hf download REPO`)."""
    out: dict[str, str] = {}
    env = c.get("env_in") or {}
    cache = str(env.get("HF_HUB_CACHE")
                or f"{env.get('HF_HOME', '/root/.cache/huggingface')}/hub").rstrip("/")
    for s in c.get("setup") or []:
        argv = [str(a) for a in s.get("argv") or []]
        if argv[:2] != ["hf", "download"] or "--repo-type" in argv:
            continue
        repo = next((a for a, p in zip(argv[2:], argv[1:], strict=False)
                     if not a.startswith("-") and p not in ("--local-dir", "--revision")), "")
        if not repo or repo.startswith("/"):
            continue
        local = argv[argv.index("--local-dir") + 1].rstrip("/") if "--local-dir" in argv else ""
        if local and local != str(env.get("MODEL_PATH", "")).rstrip("/"):
            out[local] = repo  # the launcher's MODEL_PATH stays: the writer makes it {model}
        out[f"{cache}/models--{repo.replace('/', '--')}/snapshots/0000000000"] = repo
    return out


def _sub(text: str, paths: Mapping[str, str]) -> str:
    for path, repo in paths.items():
        text = re.sub(re.escape(path) + r"(?![\w/.-])", repo, text)
    return text


def _walk(node: Any, paths: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return _sub(node, paths)
    if isinstance(node, list):
        return [_walk(x, paths) for x in node]
    if isinstance(node, dict):
        return {k: _walk(v, paths) for k, v in node.items()}
    return node


def _absolute(server: dict[str, Any]) -> None:
    """A server argument naming a file the server reads by a path relative to the script's
    working directory (upstream's /workspace, `--chat-template benchmarks/single_node/
    fixed_seq_len/../chat_templates/deepseek_v4_thinking.jinja`) as that file's absolute path:
    the harness's container starts elsewhere (/launch) and mounts the checkout at /workspace."""
    cwd, files = str(server.get("cwd") or ""), server.get("files") or {}
    if not cwd.startswith("/") or not files:
        return

    def one(tok: str) -> str:
        if not tok or tok.startswith(("/", "-", "{")):
            return tok
        full = posixpath.normpath(posixpath.join(cwd, tok))
        return full if full in files else tok

    argv = []
    for tok in server.get("argv") or []:
        flag, eq, val = tok.partition("=")
        argv.append(f"{flag}={one(val)}" if tok.startswith("-") and eq else one(tok))
    server["argv"] = argv


def localize(c: Mapping[str, Any]) -> dict[str, Any]:
    """The capture with every staged path in its server, helpers and client replaced by the
    repository it holds (env_in, the launcher's, is kept: its MODEL_PATH is {model}), and the
    server's relative paths to files it reads made absolute."""
    out = copy.deepcopy(dict(c))
    paths = staged(c)
    for part in ("server", "helpers", "client"):
        if paths and out.get(part) is not None:
            out[part] = _walk(out[part], paths)
    if out.get("server"):
        _absolute(out["server"])
    return out


def shipped_local_paths(node: Any) -> list[str]:
    """Every machine path left anywhere in a recipe document."""
    if isinstance(node, str):
        return [m.group(0) for m in LOCAL.finditer(node)]
    if isinstance(node, list):
        return [p for x in node for p in shipped_local_paths(x)]
    if isinstance(node, dict):
        return [p for v in node.values() for p in shipped_local_paths(v)]
    return []


def checkpoint_note(left: list[str], captures: list[Mapping[str, Any]]) -> str:
    """Why a left path has no spelling, when it is a file of the staged checkpoint itself: the
    server's command names one as {model_dir}/NAME (minimaxm3_fp4_b{200,300}_trt_mtp.sh@843c6254:
    `--chat_template "$MODEL_PATH/chat_template.jinja"`, docs/catalog.md); the writer does not
    spell one in an environment value (the adapters do not render engine.env) or a file's text."""
    for c in captures:
        base = str((c.get("env_in") or {}).get("MODEL_PATH") or "").rstrip("/")
        inside = sorted({p for p in left if base and p.startswith(base + "/")})
        if inside:
            model = (c.get("job") or {}).get("model") or base
            return (f"; {', '.join(posixpath.basename(p) for p in inside)} is a file of the "
                    f"staged checkpoint {model} itself, named outside the server's command "
                    "(the writer spells it {model_dir} only there, docs/catalog.md)")
    return ""
