"""Capture each InferenceX multi-node key's per-role launch into its attach recipe's rows.

    python -m harness.catalog.multinode_capture --inferencex GITDIR --srt-slurm GITDIR \
        --out recipes/recipe/multinode --python /path/to/venv/bin/python [--keys K ...]

For every srt-slurm row (a `CONFIG_FILE=` setting): the launcher's checkout of srt-slurm
(harness/catalog/multinode_pins.py) is unpacked from the srt-slurm git dir into a temporary
directory, InferenceX's recipe folders are copied over it as the launcher copies them, an
`srtslurm.yaml` like the launcher's is written (fake account/partition, the recipe's model
alias pointing at an empty directory, the master's image for the container aliases), and
srtctl's own orchestrator is run on the recipe under recording stand-ins
(harness/catalog/multinode_srtdriver.py, run by --python: an interpreter with srtctl's
dependencies, never the harness's). Its records become the row's `deployment:` block
(harness/catalog/multinode_roles.py). Rows that cannot be captured are listed with the
reason in IMPORT_REPORT.md. Nothing of upstream's is written into the output but the
captured argv/env/file text."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness.catalog import multinode, multinode_amd, multinode_report
from harness.catalog import multinode_synthetic as synthetic
from harness.catalog.multinode_gpus import read_pools
from harness.catalog.multinode_pins import Pin, pin_for, uses_power
from harness.catalog.multinode_roles import NotCaptured, deployment
from harness.catalog.multinode_upstream import PYXIS_SCRIPTS, why_missing, why_refused

DRIVER = Path(__file__).with_name("multinode_srtdriver.py")
RECIPES = "benchmarks/multi_node/srt-slurm-recipes/"
NGINX_IMAGE = "nginx:1.27.4"  # runners/launch_gb200-nv.sh@843c6254 NGINX_IMAGE
REFUSED = "srtctl refused the recipe: "


def git(git_dir: str, *args: str, binary: bool = False) -> Any:
    out = subprocess.run(["git", "-C", git_dir, *args], check=True,
                         capture_output=True)
    return out.stdout if binary else out.stdout.decode()


def resolve_ref(srt_git: str, ref: str, before: str) -> str:
    """A tag or commit as it is; a branch (`main`, `sa-submission-q2-2026`) as it stood at
    the InferenceX commit's date, since the launcher checks out whatever it was then."""
    for cand in (f"refs/tags/{ref}", f"refs/heads/{ref}"):
        try:
            git(srt_git, "rev-parse", "--verify", "--quiet", cand)
        except subprocess.CalledProcessError:
            continue
        if cand.startswith("refs/tags/"):
            return git(srt_git, "rev-parse", cand + "^{commit}").strip()
        return git(srt_git, "rev-list", "-1", f"--before={before}", cand).strip()
    return git(srt_git, "rev-parse", ref + "^{commit}").strip()


def launcher_of(runner: str, runners_yaml: dict[str, Any], launchers: set[str]) -> str:
    """The launch script a runner label runs: `launch_${RUNNER_NAME%%_*}.sh`
    (.github/workflows/benchmark-multinode-tmpl.yml@843c6254), the runner's names from
    configs/runners.yaml's labels; a label not listed there that names a launch script itself
    (`gb300-nv`) runs that script."""
    names = (runners_yaml.get("labels") or {}).get(runner) or []
    if names:
        return str(names[0]).split("_", 1)[0]
    bare = runner.split(":", 1)[-1]
    if bare in launchers:
        return bare
    raise NotCaptured(f"runner {runner!r} is not in configs/runners.yaml and names no "
                      "runners/launch_*.sh")


def config_file(row: dict[str, Any]) -> str | None:
    for s in [*(row["prefill"].get("additional-settings") or []),
              *(row["decode"].get("additional-settings") or [])]:
        if s.startswith("CONFIG_FILE="):
            return s.split("=", 1)[1]
    return None


class Trees:
    """srt-slurm checkouts with InferenceX's recipes copied over, one per (commit, overlays)."""

    def __init__(self, base: Path, srt_git: str, ix_git: str, ix_commit: str):
        self.base, self.srt_git, self.ix_git, self.ix_commit = base, srt_git, ix_git, ix_commit
        self.made: dict[tuple, Path] = {}
        self.injected: set[Path] = set()

    def _extract(self, git_dir: str, rev: str, dest: Path, paths: list[str]) -> None:
        data = git(git_dir, "archive", "--format=tar", rev, *paths, binary=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")

    def get(self, sha: str, overlays: tuple[tuple[str, str], ...], own: str = "") -> Path:
        """`own`: a launcher that also copies each row's own recipe in gets its own tree."""
        key = (sha, overlays, own)
        if key in self.made:
            return self.made[key]
        dest = self.base / f"srt-{len(self.made)}"
        dest.mkdir(parents=True)
        self._extract(self.srt_git, sha, dest, [])
        if overlays:
            ix = self.base / "ix"
            if not ix.exists():
                self._extract(self.ix_git, self.ix_commit, ix, [RECIPES.rstrip("/")])
            for src, dst in overlays:  # a file onto a file, a folder's files into a folder
                s, d = ix / RECIPES / src, dest / dst
                for f in [s] if s.is_file() else [f for f in s.rglob("*") if f.is_file()]:
                    t = d if f == s else d / f.relative_to(s)
                    t.parent.mkdir(parents=True, exist_ok=True)
                    t.write_bytes(f.read_bytes())
        self.made[key] = dest
        return dest

    def inject(self, tree: Path, cfg: str, syn: tuple | None, python: str) -> None:
        """Synthetic acceptance injected into the tree's recipe once, as the launcher does
        (harness/catalog/multinode_synthetic.py); syn: (length, framework, model prefix)."""
        path = tree / cfg.split(":", 1)[0]
        if syn is None or path in self.injected:
            return
        ix = self.base / "ix-injector"
        if not ix.exists():
            self._extract(self.ix_git, self.ix_commit, ix, synthetic.INJECTOR_PATHS)
        synthetic.inject(ix, path, syn[1], syn[2], syn[0], python)
        self.injected.add(path)

    def copy_config(self, tree: Path, cfg: str) -> None:
        """The row's own recipe from InferenceX's srt-slurm-recipes over the checkout, where
        InferenceX has it (`cp "$LOCAL_CONFIG_FILE" "$CONFIG_PATH"`,
        runners/launch_h200-dgxc-slurm.sh@843c6254 lines 20-21 and 222-225)."""
        path = cfg.split(":", 1)[0]
        rel = path[len("recipes/"):] if path.startswith("recipes/") else path
        try:
            data = git(self.ix_git, "show", f"{self.ix_commit}:{RECIPES}{rel}", binary=True)
        except subprocess.CalledProcessError:
            return
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(data)


def _model_alias(recipe: Path) -> tuple[str | None, str | None]:
    raw = yaml.safe_load(recipe.read_text()) or {}
    for block in (raw, raw.get("base") or {}):
        model = block.get("model") or {}
        if model.get("path"):
            return str(model["path"]), str(model.get("container") or "")
    return None, None


def srtslurm_yaml(tree: Path, gpus_per_node: int, paths: dict[str, str], image: str) -> str:
    """The launcher's srtslurm.yaml with this sandbox's values (account/partition fake, the
    model aliases at an empty directory, the image by name where upstream uses its squash)."""
    return yaml.safe_dump({
        "default_account": "account", "default_partition": "partition",
        "default_time_limit": "6:00:00", "gpus_per_node": gpus_per_node,
        "network_interface": "", "srtctl_root": str(tree), "model_paths": paths,
        "containers": {"dynamo-trtllm": image, "dynamo-sglang": image, image: image,
                       "nginx-sqsh": NGINX_IMAGE, "nginx": NGINX_IMAGE},
        "use_segment_sbatch_directive": False}, sort_keys=False)


def capture_in_tree(tree: Path, cfgs: list[str], image: str, python: str,
                    setup_script: str | None, gpus_per_node: int
                    ) -> dict[str, dict[str, Any] | str]:
    """Run srtctl's orchestrator (the checkout's src/srtctl) on recipes of one prepared
    srt-slurm tree: {recipe: the driver's capture, or why srtctl refused it}."""
    aliases = {a for a in (_model_alias(tree / c.split(":", 1)[0])[0] for c in cfgs)
               if a and not a.startswith("/")}  # an absolute path needs no alias
    model_dir = tree / "_model"
    model_dir.mkdir(exist_ok=True)
    paths = {a: str(model_dir) for a in sorted(aliases)}
    (tree / "srtslurm.yaml").write_text(srtslurm_yaml(tree, gpus_per_node, paths, image))
    with tempfile.TemporaryDirectory(prefix="mn-capture-") as work:
        cmd = [python, str(DRIVER), "--workdir", work]
        for c in cfgs:
            cmd += ["--recipe", c]
        if setup_script:
            cmd += ["--setup-script", setup_script]
        stand_ins = Path(work) / "bin"
        stand_ins.mkdir()
        # srtctl expands SLURM_NODELIST with `scontrol show hostnames`; the stand-in
        # answers the comma list the driver sets
        (stand_ins / "scontrol").write_text("#!/bin/sh\necho \"$3\" | tr ',' '\\n'\n")
        (stand_ins / "scontrol").chmod(0o755)
        env = {"PYTHONPATH": str(tree / "src"), "PATH": f"{stand_ins}:/usr/bin:/bin",
               "HOME": work}
        try:
            out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                                 timeout=120 + 60 * len(cfgs))
        except subprocess.TimeoutExpired:
            return {c: "srtctl's orchestrator did not finish in time" for c in cfgs}
        if out.returncode != 0:
            last = [ln for ln in out.stderr.strip().splitlines() if ln.strip()][-1:]
            return {c: f"srtctl could not be run: {(last or ['(no message)'])[0][:300]}"
                    for c in cfgs}
        results = json.loads(out.stdout)
    got: dict[str, dict[str, Any] | str] = {}
    for r in results:
        if "error" in r:
            got[r["recipe"]] = REFUSED + r["error"]
        else:
            r["capture"]["model_path"] = str(model_dir.resolve())
            got[r["recipe"]] = r["capture"]
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.catalog.multinode_capture")
    ap.add_argument("--inferencex", required=True, help="InferenceX git dir")
    ap.add_argument("--srt-slurm", required=True, help="NVIDIA/srt-slurm git dir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="843c6254ff69b567f772f6a5fd97675af3d04431")
    ap.add_argument("--python", default=sys.executable,
                    help="an interpreter with srtctl's dependencies (not the harness's)")
    ap.add_argument("--keys", nargs="*",
                    help="only these keys: their recipes are rewritten, the others' files are "
                         "left as they are and read back for the report")
    ap.add_argument("--additions-sidecar", action="store_true",
                    help="write the importer's role fields (placement, vary, preamble, ...) "
                         "to deployments/<key>.yaml instead of the roles, for a launch schema "
                         "without them")
    ap.add_argument("--save", help="also write every capture and reason to this JSON file")
    ap.add_argument("--load", help="rewrite the recipes from a --save file, capturing nothing")
    ap.add_argument("--recapture-upstream-scripts", action="store_true",
                    help="with --load: capture the keys upstream deploys with its own scripts "
                         "(the AMD keys, harness/catalog/multinode_amd.py) anew over the file")
    ap.add_argument("--jobs", type=int, default=2,
                    help="upstream-script rows captured at once (each its own sandbox)")
    a = ap.parse_args(argv)
    commit, masters = multinode.read_masters(a.inferencex, a.commit)
    when = git(a.inferencex, "show", "-s", "--format=%cI", commit).strip()
    runners = yaml.safe_load(git(a.inferencex, "show", f"{commit}:configs/runners.yaml"))
    if a.load:
        saved = json.loads(Path(a.load).read_text())
        deps = {(k, i): d for k, i, d in saved["captured"]}
        missed = {(k, i): why for k, i, why in saved["missed"]}
    else:
        deps, missed = capture_all(a, masters, commit, when, runners)
    if not a.load or a.recapture_upstream_scripts:
        amd_deps, amd_missed = multinode_amd.capture_rows(a.inferencex, commit, masters,
                                                          runners, a.keys, jobs=a.jobs,
                                                          python=a.python)
        for k in [*amd_deps, *amd_missed]:
            deps.pop(k, None)
            missed.pop(k, None)
        deps.update(amd_deps)
        missed.update(amd_missed)
    if a.save:
        Path(a.save).write_text(json.dumps({
            "captured": [[k, i, d] for (k, i), d in sorted(deps.items())],
            "missed": [[k, i, w] for (k, i), w in sorted(missed.items())]}, indent=0))
    keys = multinode.write_attach_recipes(masters, commit, a.out, deps,
                                          inline_additions=not a.additions_sidecar,
                                          not_captured=missed, only=a.keys)
    if a.keys:  # the other keys' rows as their recipe files already ship them
        shipped, reasons = multinode_report.read_recipes(Path(a.out), masters, skip=a.keys)
        deps, missed = {**shipped, **deps}, {**reasons, **missed}
    multinode_report.write(Path(a.out) / "IMPORT_REPORT.md", masters, commit, deps, missed)
    print(f"{len(keys)} keys written; {len(deps)} rows captured, {len(missed)} not")
    return 0


Job = tuple[str, int, str, dict, str, Pin, "tuple | None"]


def capture_all(a, masters: dict, commit: str, when: str, runners: dict
                ) -> tuple[dict[tuple[str, int], dict], dict[tuple[str, int], str]]:
    """Every srt-slurm row's deployment, or why it is not captured."""
    deps: dict[tuple[str, int], dict[str, Any]] = {}
    missed: dict[tuple[str, int], str] = {}
    jobs = _group_rows(a, masters, commit, when, runners, missed)
    with tempfile.TemporaryDirectory(prefix="mn-capture-") as tmp:
        trees = Trees(Path(tmp), a.srt_slurm, a.inferencex, commit)
        for group, rows in jobs.items():
            _capture_group(a, trees, group, rows, commit, deps, missed)
    return deps, missed


def _group_rows(a, masters: dict, commit: str, when: str, runners: dict,
                missed: dict[tuple[str, int], str]) -> dict[tuple, list[Job]]:
    """The srt-slurm rows to capture, grouped by the tree they are captured in; rows whose
    launch cannot be planned go to `missed` with the reason."""
    shas: dict[str, str] = {}
    jobs: dict[tuple, list[Job]] = {}
    for master in masters.values():
        for key, e in master.items():
            if not (isinstance(e, dict) and e.get("multinode")) or (a.keys and key not in a.keys):
                continue
            k = {"framework": e["framework"], "prefix": e["model-prefix"],
                 "precision": e["precision"],
                 "agentic": "agentic-coding" in (e.get("scenarios") or {})}
            for i, (_, row) in enumerate(multinode.scenario_rows(e, key)):
                try:
                    pin, sha, cfg = _plan(a, e, k, row, runners, commit, when, shas)
                except NotCaptured as err:
                    missed[(key, i)] = str(err)
                    continue
                source = (f"{pin.repo}@{sha} {cfg} (via srtctl's SweepOrchestrator.run under "
                          "recording stand-ins, harness/catalog/multinode_srtdriver.py; "
                          f"checkout and recipe overlays as {pin.launcher}@{commit[:8]} "
                          "makes them" + (f", --setup-script {pin.setup_script}"
                                          if pin.setup_script else "") + ")")
                al = synthetic.length(row) if pin.injects_synthetic else None
                syn = None if al is None else (al, str(e["framework"]), str(e["model-prefix"]))
                if syn:
                    source = (source[:-1] + f"; SYNTHETIC_ACCEPTANCE_LENGTH={al} injected by "
                              "runners/inject_synthetic_acceptance.py as the launcher runs it)")
                # a tree of its own for a launcher that copies the row's recipe in, and per
                # injected acceptance length (the injector rewrites the recipe in place)
                own = (pin.launcher if pin.copies_config else "") + \
                    ("" if al is None else f"|al={al}")
                group = (sha, pin.overlays, pin.setup_script, pin.gpus_per_node,
                         str(e.get("image") or ""), pin.repo, own)
                jobs.setdefault(group, []).append((key, i, cfg, row, source, pin, syn))
    return jobs


def _capture_group(a, trees: Trees, group: tuple, rows: list[Job], commit: str,
                   deps: dict[tuple[str, int], dict], missed: dict[tuple[str, int], str]
                   ) -> None:
    """Capture the rows of one prepared srt-slurm tree into `deps` (or `missed`)."""
    sha, overlays, setup, gpn, image, repo, own = group
    tree = trees.get(sha, overlays, own)
    todo = []
    for key, i, cfg, _row, _src, pin, syn in rows:
        if pin.copies_config:
            trees.copy_config(tree, cfg)
        if (tree / cfg.split(":", 1)[0]).is_file():
            try:
                trees.inject(tree, cfg, syn, a.python)
            except NotCaptured as err:
                missed[(key, i)] = str(err)
                continue
            todo.append(cfg)
        else:
            missed[(key, i)] = why_missing(a.inferencex, commit, cfg, repo, sha,
                                           a.srt_slurm, pin.launcher)
    got = capture_in_tree(tree, sorted(set(todo)), image, a.python, setup, gpn) if todo else {}
    for key, i, cfg, row, source, pin, syn in rows:
        if (key, i) in missed:
            continue
        try:
            cap = got[cfg]
            if isinstance(cap, str) and cap.startswith(REFUSED):
                raise NotCaptured(why_refused(cap[len(REFUSED):], a.inferencex, commit,
                                              cfg, repo, pin.ref, a.srt_slurm, pin.launcher))
            if isinstance(cap, str):
                raise NotCaptured(cap)
            dep = synthetic.with_length(deployment(cap, source), syn[0] if syn else None)
            read_pools(multinode.pool(row["prefill"]), multinode.pool(row["decode"]), dep)
            deps[(key, i)] = dep
        except NotCaptured as err:
            missed[(key, i)] = str(err)
    print(f"{repo}@{sha[:12]}: {sum((k, i) in deps for k, i, *_ in rows)}/{len(rows)} "
          "rows captured", file=sys.stderr)


def _plan(a, e: dict, k: dict, row: dict, runners: dict, commit: str, when: str,
          shas: dict[str, str]) -> tuple[Pin, str, str]:
    """The launcher's checkout (its pin, the commit) and the CONFIG_FILE of one row."""
    if e["framework"] in PYXIS_SCRIPTS:
        raise NotCaptured(PYXIS_SCRIPTS[e["framework"]])
    cfg = config_file(row)
    if cfg is None:
        raise NotCaptured(f"deployed by upstream's own scripts (framework {e['framework']}, "
                          f"runner {e['runner']}), not srt-slurm: not captured yet")
    launchers = {p[len("runners/launch_"):-3] for p in git(
        a.inferencex, "ls-tree", "--name-only", commit, "runners/").split()
        if p.startswith("runners/launch_")}
    launcher = launcher_of(str(e["runner"]), runners, launchers)
    pin = pin_for(launcher, k, uses_power(a.inferencex, commit, cfg))
    if pin is None:
        raise NotCaptured(f"runners/launch_{launcher}.sh is not transcribed in "
                          "harness/catalog/multinode_pins.py")
    if pin.unavailable:
        raise NotCaptured(pin.unavailable)
    if pin.ref not in shas:
        try:
            shas[pin.ref] = resolve_ref(a.srt_slurm, pin.ref, when)
        except subprocess.CalledProcessError as err:
            raise NotCaptured(f"{pin.repo} ref {pin.ref} is not in the srt-slurm git dir") \
                from err
    return pin, shas[pin.ref], cfg


if __name__ == "__main__":
    sys.exit(main())
