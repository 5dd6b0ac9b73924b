"""`harness catalog import DIR`: every key of an InferenceX checkout's masters, its single-node
jobs captured from upstream's own scripts, written as data (`<out>/captured/<key>.json`), one
recipe per key where the recipe writer is present, and a report of what was not captured."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.catalog.capture import (
    DEFAULT_BOUND_S,
    build_bindirs,
    capture_job,
    choose_node,
    node_inferred,
)
from harness.catalog.client_settings import client_settings
from harness.catalog.masters import (
    MasterKey,
    launcher_for,
    load_masters,
    load_runners,
    runner_nodes,
)
from harness.catalog.matrix import expand

UPSTREAM = "SemiAnalysisAI/InferenceX"


class ImportError_(ValueError):
    """A checkout the importer cannot read (named so it does not shadow the builtin)."""


@dataclass
class CheckoutState:
    commit: str
    dirty: bool
    branches: list[str]

    def notes(self) -> list[str]:
        out = []
        if self.dirty:
            out.append("the working tree has uncommitted changes: the captures are of those "
                       "files, not of the commit")
        if not self.branches:
            out.append(f"commit {self.commit[:12]} is on no named branch of this clone")
        return out


@dataclass
class KeyResult:
    mk: MasterKey
    launches: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""  # why the key has no launches at all
    note: str = ""  # how a launch was arrived at, when not by upstream's files alone

    @property
    def ok(self) -> int:
        return sum(1 for c in self.launches if c["status"] == "ok")


def checkout_state(checkout: Path) -> CheckoutState:
    def git(*args: str) -> str:
        r = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise ImportError_(f"{checkout}: git {' '.join(args)} failed: {r.stderr.strip()} "
                               f"(the importer needs a git checkout of {UPSTREAM})")
        return r.stdout.strip()

    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    branches = [b.strip().lstrip("* ").strip() for b in
                git("branch", "-a", "--contains", commit, "--format=%(refname:short)").splitlines()
                if b.strip() and "HEAD detached" not in b]
    return CheckoutState(commit, dirty, branches)


def capture_key(checkout: Path, commit: str, mk: MasterKey, runners: dict[str, Any],
                bindirs: Path, bound_s: float, workers: int = 1) -> KeyResult:
    res = KeyResult(mk)
    if mk.kind == "multinode":
        res.reason = "multi-node: an attach recipe from master data (harness/catalog/multinode.py)"
        return res
    node = choose_node(mk, runners, checkout)
    if node is not None and node_inferred(mk, runners, node):
        res.note = (f"runner label {mk.runner!r} is not in configs/runners.yaml; node {node} "
                    f"inferred from its name")
    if node is None:
        if not runner_nodes(runners, mk.runner):
            res.reason = (f"runner label {mk.runner!r} is not in configs/runners.yaml: no node "
                          f"runs this key upstream at this commit")
        else:
            res.reason = (f"no node of runner label {mk.runner!r} in configs/runners.yaml has a "
                          f"launcher in runners/ (looked for launch_<node prefix>.sh)")
        return res
    jobs = expand(mk, runners)

    def one(rj: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
        return capture_job(checkout, commit, mk, rj[0], rj[1], node, bound_s, bindirs)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        res.launches = list(pool.map(one, jobs))
    return res


def compact_server_env(launch: dict[str, Any]) -> None:
    """The server's full environment as what differs from env_in: `env_added` (set or changed
    by the script) and `env_removed` (unset by it: agentic scripts unset MAX_MODEL_LEN), so
    env at server start = env_in - env_removed + env_added."""
    server = launch.get("server")
    if not server or "env" not in server:
        return
    env = server.pop("env")
    env_in = launch.get("env_in", {})
    server["env_added"] = {k: v for k, v in env.items() if env_in.get(k) != v}
    server["env_removed"] = sorted(k for k in env_in if k not in env)


def write_captured(res: KeyResult, commit: str, out_dir: Path) -> Path:
    path = out_dir / "captured" / f"{res.mk.key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    for launch in res.launches:
        settings, unhonoured = client_settings(launch.get("client"))
        launch["client_settings"], launch["client_unhonoured"] = settings, unhonoured
        compact_server_env(launch)
    doc = {"key": res.mk.key, "master": res.mk.master, "commit": commit, "kind": res.mk.kind,
           "upstream": UPSTREAM, "entry": res.mk.entry, "launcher": None, "reason": res.reason,
           "note": res.note, "launches": res.launches}
    if res.launches:
        doc["launcher"] = launcher_for(res.launches[0]["runner_node"])
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return path


def load_captured(out_dir: Path, masters: list[MasterKey], commit: str) -> dict[str, KeyResult]:
    """Results already written for `commit` (a rerun of some keys reports on all of them)."""
    out = {}
    for mk in masters:
        path = out_dir / "captured" / f"{mk.key}.json"
        if path.is_file():
            doc = json.loads(path.read_text())
            if doc.get("commit") == commit:
                out[mk.key] = KeyResult(mk, doc.get("launches", []), doc.get("reason", ""),
                                        doc.get("note", ""))
    return out


def import_checkout(checkout: Path, out_dir: Path, keys: list[str] | None = None,
                    bound_s: float = DEFAULT_BOUND_S, workers: int = 2,
                    progress: Callable[[str], None] = print,
                    capture: bool = True) -> tuple[CheckoutState, list[KeyResult]]:
    """Capture `keys` (default all) and write them; the other keys' captures of this commit
    already in `out_dir` are kept. capture=False captures nothing: it re-reads and rewrites
    what is there (client settings, report, recipes)."""
    checkout = checkout.resolve()
    state = checkout_state(checkout)
    masters = load_masters(checkout)
    if keys:
        unknown = sorted(set(keys) - {m.key for m in masters})
        if unknown:
            raise ImportError_(f"{checkout}: no key {', '.join(unknown)} in the masters")
    if not capture:
        keys = []
    done = load_captured(out_dir, masters, state.commit) if keys is not None else {}
    runners = load_runners(checkout)
    results = []
    with tempfile.TemporaryDirectory(prefix="ix-standins-") as tmp:
        bindirs = build_bindirs(Path(tmp))
        for mk in masters:
            if keys is not None and mk.key not in keys:
                if mk.key in done:
                    write_captured(done[mk.key], state.commit, out_dir)
                    results.append(done[mk.key])
                continue
            res = capture_key(checkout, state.commit, mk, runners, bindirs, bound_s, workers)
            write_captured(res, state.commit, out_dir)
            progress(f"{mk.key}: {res.ok}/{len(res.launches)} launches captured"
                     + (f" ({res.reason})" if res.reason else ""))
            results.append(res)
    return state, results


def write_recipes(results: list[KeyResult], commit: str, out_dir: Path
                  ) -> tuple[int, list[str]]:
    """One recipe YAML per single-node key through the recipe writer (multi-node keys are
    attach recipes, written by harness/catalog/multinode.py under <out>/multinode/); returns
    (written, [key: why not] for keys without a recipe)."""
    from harness.catalog.recipe_writer import CatalogError, catalog_to_recipe
    from harness.catalog.recipe_yaml import dump_recipe

    n, missing = 0, []
    for res in results:
        if res.mk.kind == "multinode":
            continue
        try:
            recipe = catalog_to_recipe(res.launches, res.mk.entry, res.mk.key, commit)
        except CatalogError as e:
            missing.append(f"{res.mk.key}: {e}")
            continue
        header = [f"InferenceX {res.mk.key}, imported from SemiAnalysisAI/InferenceX@{commit}.",
                  f"  harness sweep recipe={res.mk.key}",
                  "Generated by `harness catalog import` (recipes/recipe/README.md); do not "
                  "edit by hand."]
        (out_dir / f"{res.mk.key}.yaml").write_text(dump_recipe(recipe, header))
        n += 1
    return n, missing
