"""The harness installed from a wheel, outside its checkout: a fresh virtualenv, `harness` run
from a directory that is not the clone. The wheel is built from a copy of the source tree as it
stands (tracked and new files), so what is tested is what `pip install .` ships; the project's
dependencies come from the development virtualenv (a .pth file), installing nothing from the
network."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from harness.config.locations import SHIPPED_TREES, checkout_root

CHECKOUT = checkout_root()
KEY = "dsr1-fp4-b200-sglang-mtp"  # an InferenceX single-node key (recipes/recipe/)
NOT_SHIPPED = ("tests/", "docs/", "benchmarks/", "results/", "dashboards/")

pytestmark = pytest.mark.skipif(CHECKOUT is None, reason="needs the source checkout to build")


def _source_copy(dest: Path) -> None:
    """The files `git` knows of (tracked, or new and not ignored), as they are on disk."""
    listed = subprocess.run(
        ["git", "-C", str(CHECKOUT), "ls-files", "-z", "--cached", "--others",
         "--exclude-standard"], capture_output=True, text=True, check=True).stdout
    for rel in filter(None, listed.split("\0")):
        src = CHECKOUT / rel
        if rel.startswith(NOT_SHIPPED) or not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's bin directory, an empty working directory outside the clone)."""
    base = tmp_path_factory.mktemp("install")
    src, wheels, env, away = base / "src", base / "wheels", base / "venv", base / "away"
    _source_copy(src)
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels)], check=True, capture_output=True, timeout=300)
    wheel, = wheels.glob("harness-*.whl")
    venv.create(env, with_pip=False)
    site = next(env.glob("lib/python*/site-packages"))
    # the dependencies: the development venv's site-packages as a plain path entry (its own
    # .pth files, among them the editable install of this checkout, are not processed)
    deps = Path(next(p for p in sys.path if p.endswith("site-packages")))
    (site / "harness_deps.pth").write_text(f"{deps}\n")
    subprocess.run([*pip, "--python", str(env / "bin" / "python"), "install", "--no-deps",
                    "-q", str(wheel)], check=True, capture_output=True, timeout=300)
    away.mkdir()
    return env / "bin", away


def _run(installed: tuple[Path, Path], *args: str) -> subprocess.CompletedProcess[str]:
    bin_dir, away = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(bin_dir / args[0]), *args[1:]], cwd=away, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_installed_package_reads_its_own_copy_of_the_recipes(installed) -> None:
    r = _run(installed, "python", "-c",
             "import harness; from harness.config.locations import repo_root;"
             "print(harness.__file__); print(repo_root())")
    assert r.returncode == 0, r.stderr
    module, root = r.stdout.split()
    assert not module.startswith(str(CHECKOUT)), module  # not the checkout's harness
    assert root.endswith("harness/shipped") and root.startswith(str(installed[0].parent))
    for tree in SHIPPED_TREES:  # every file of the checkout's trees went into the wheel
        tracked = subprocess.run(["git", "-C", str(CHECKOUT), "ls-files", tree],
                                 capture_output=True, text=True, check=True).stdout.split()
        missing = [t for t in tracked
                   if (CHECKOUT / t).is_file() and not (Path(root) / t).is_file()]
        assert tracked and not missing, missing[:5]


def test_sweep_help_lists_the_shipped_groups(installed) -> None:
    r = _run(installed, "harness", "sweep", "--help")
    assert r.returncode == 0, r.stderr
    assert "smollm2-135m" in r.stdout and "fixed-128x64" in r.stdout and "llamacpp" in r.stdout


def test_catalog_show_renders_a_shipped_key(installed) -> None:
    r = _run(installed, "harness", "catalog", "show", KEY)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(KEY) and "argv: python3 -m sglang.launch_server" in r.stdout


def test_the_default_sweep_composes_and_writes_nothing(installed) -> None:
    r = _run(installed, "harness", "sweep", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "4 points" in r.stdout and "nothing was started or written" in r.stdout
    assert list(installed[1].iterdir()) == []


def test_a_users_recipe_folder_from_elsewhere(installed, tmp_path) -> None:
    mine = tmp_path / "my-recipes"
    (mine / "recipe").mkdir(parents=True)
    (mine / "recipe" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /scenarios: fixed-1k128\n"
        "concurrency: [3, 5, 7]\n")
    r = _run(installed, "harness", "sweep", "--config-dir", str(mine), "recipe=mine",
             "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "3 points" in r.stdout
    r = _run(installed, "harness", "sweep", "--config-dir", str(mine), "recipe=minee")
    assert r.returncode == 2 and "'mine'" in r.stderr, r.stderr
    line, = r.stderr.splitlines()  # both places it looked, the installed one in full
    assert "harness/shipped/recipes/recipe/minee.yaml" in line and f"{mine}/recipe/minee" in line


def test_a_relative_data_path_is_the_users_file_else_the_shipped_one(tmp_path,
                                                                      monkeypatch) -> None:
    from harness.config.locations import data_path, repo_root

    (tmp_path / "scenarios").mkdir()
    (tmp_path / "mine.jsonl").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    assert data_path("mine.jsonl") == tmp_path / "mine.jsonl"
    shipped = "scenarios/fixed-128x64.yaml"  # not in the user's scenarios/: the shipped one
    assert data_path(shipped) == repo_root() / shipped and data_path(shipped).is_file()
    assert data_path("/abs/x") == Path("/abs/x")


def test_a_users_own_trace_by_a_relative_path_from_elsewhere(installed) -> None:
    """`harness traces stats` from a directory outside the clone: a relative path is the user's
    file there when it exists (even where a shipped file has the same name), else the shipped
    one; a path in neither place names both."""
    away = installed[1]
    shipped = "scenarios/traces/weka-cc-traces/trace_0026.json"
    mine = away / shipped  # the same relative path as a shipped trace, but the user's own
    mine.parent.mkdir(parents=True)
    trace = json.loads((CHECKOUT / shipped).read_text())
    trace["requests"] = trace["requests"][:2]  # two requests: the shipped file has three
    mine.write_text(json.dumps(trace))
    try:
        r = _run(installed, "harness", "traces", "stats", shipped)
        assert r.returncode == 0, r.stderr
        assert _requests(r.stdout) == 2
        (away / "own.json").write_text(json.dumps(trace))
        r = _run(installed, "harness", "traces", "stats", "own.json")
        assert r.returncode == 0, r.stderr
        assert _requests(r.stdout) == 2
    finally:
        shutil.rmtree(away / "scenarios")
        (away / "own.json").unlink(missing_ok=True)
    r = _run(installed, "harness", "traces", "stats", shipped)  # now the shipped one
    assert r.returncode == 0, r.stderr
    assert _requests(r.stdout) == 3
    r = _run(installed, "harness", "traces", "stats", "missing.json")
    assert r.returncode == 2, r.stderr
    line, = r.stderr.splitlines()
    assert f"{away}/missing.json" in line and "harness/shipped/missing.json" in line, line


def _requests(stats: str) -> int:
    """The request count `harness traces stats` prints ("sessions 1, requests 3, ...")."""
    return int(re.search(r"requests (\d+)", stats).group(1))
