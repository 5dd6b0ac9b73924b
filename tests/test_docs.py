"""The README and docs/ against the repository: the lists and counts the README gives of the
shipped recipes are the shipped recipes, and every repository path the docs cite exists. A new
chip, speculator or catalog key without its README line fails here, not in a newcomer's hands."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.config.groups import options
from harness.config.locations import repo_root

ROOT = repo_root()
README = (ROOT / "README.md").read_text()


def _group_paragraph() -> str:
    start = README.index("Config groups, one YAML per choice")
    return " ".join(README[start:README.index("The primary config is", start)].split())


def _listed(folder: str) -> list[str]:
    """The README's list for a group folder: `recipes/chip/` (h100, h200, ...; prose) -> names."""
    m = re.search(re.escape(f"`{folder}` (") + r"([^;)]*)", _group_paragraph())
    assert m, f"README.md's config-groups paragraph lists no options for {folder}"
    return [w.strip() for w in m.group(1).split(",")]


@pytest.mark.parametrize("group,folder", [
    ("model", "recipes/model/"), ("chip", "recipes/chip/"), ("engine", "recipes/engine/"),
    ("speculator", "recipes/speculator/"), ("eval", "recipes/eval/"),
    ("scenarios", "scenarios/")])
def test_the_readme_lists_each_groups_shipped_options(group: str, folder: str) -> None:
    shipped = [o for o in options(group) if "/" not in o]
    listed = _listed(folder)
    assert sorted(listed) == sorted(shipped), (
        f"README.md lists {folder} as {listed}; the shipped options are {shipped}")


def _recipe_models() -> Counter[str]:
    """Each single-node catalog key's model, from its `override /model` default."""
    found: Counter[str] = Counter()
    for f in (ROOT / "recipes" / "recipe").glob("*.yaml"):
        doc = yaml.safe_load(f.read_text())
        models = [v for d in doc.get("defaults", []) if isinstance(d, dict)
                  for k, v in d.items() if k.split()[-1].lstrip("/") == "model"]
        found[models[0] if models else "?"] += 1
    return found


def test_the_readme_counts_the_catalog_keys_as_shipped() -> None:
    text = _group_paragraph()
    keys = _recipe_models()
    n = sum(keys.values())
    assert f"({n} launchable keys" in text, f"README.md: the catalog ships {n} launchable keys"
    m = re.search(r"— ((?:\d+ [\w.-]+, )*\d+ [\w.-]+) —", text)
    assert m, "README.md: no per-model count of the launchable keys"
    claimed = {name: int(k) for k, name in (x.split() for x in m.group(1).split(", "))}
    assert claimed == dict(keys), f"README.md says {claimed}; the shipped keys are {dict(keys)}"
    multi = len(list((ROOT / "recipes" / "recipe" / "multinode").glob("*.yaml")))
    assert f"the {multi} multi-node keys" in text, f"README.md: {multi} multi-node keys ship"


def test_the_readme_counts_the_published_acceptance_rows() -> None:
    from harness.speculation.acceptance import load_table

    published = sum(1 for r in load_table(ROOT / "recipes" / "acceptance")
                    if r.file.startswith("published.csv:"))
    m = re.search(r"`recipes/acceptance/` holds .*?: (\d+)\s+published rows", README, re.S)
    assert m and int(m.group(1)) == published, (
        f"README.md: recipes/acceptance/published.csv holds {published} rows")


def test_the_readme_layout_names_every_package() -> None:
    block = README[README.index("## Layout"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    named = set(re.findall(r"^  (\w+)/", block, re.M))
    packages = {p.name for p in (ROOT / "harness").iterdir()
                if (p / "__init__.py").is_file()}
    assert named == packages, (f"README.md's layout names {sorted(named)}; the packages are "
                               f"{sorted(packages)}")


# A path of ours starts with one of our top-level folders. Not checked: paths the harness
# writes (results/, dashboards/), and upstream citations, which the docs mark as such: a
# `path@commit`, an `owner/repo:path`, an override value (`engine.deployment=recipes/...`) or a
# deployment row (`recipes/x.yaml:row`), both srt-slurm's.
OURS = r"(?:harness|recipes|scenarios|data|docs|tests|benchmarks|\.ci)"
CITED = re.compile(r"(?<![\w/.@:$=-])(" + OURS + r"/[\w./+-]*+)(?![@<{*])(?!:\w)")
# InferenceX's own folders share our top-level names: its benchmark scripts (our benchmarks/
# holds flat scripts only), and a Hub dataset's file name (docs/corpus.md).
UPSTREAM = ("benchmarks/benchmark_lib.sh", "benchmarks/single_node", "benchmarks/multi_node",
            "data/train-")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _dead_citations(text: str) -> list[str]:
    """`line: path` for each path of ours the text cites that does not exist."""
    dead = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("<!-- example:"):
            continue  # the file a worked example has the reader write (docs/architecture.md)
        for m in CITED.finditer(line):
            cited = m.group(1).rstrip(".-+")
            if cited.startswith(UPSTREAM):
                continue
            if not (ROOT / cited).exists():
                dead.append(f"{i}: {cited}")
    return dead


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_repository_path_a_page_cites_exists(page: Path) -> None:
    dead = _dead_citations(page.read_text())
    assert not dead, (f"{page.relative_to(ROOT)} cites paths that do not exist (line: path):\n"
                      + "\n".join(dead))


def test_the_citation_check_tells_ours_from_upstreams() -> None:
    text = ("See `harness/nowhere.py` and harness/config/locations.py, `recipes/model/`,\n"
            "upstream's `benchmarks/benchmark_lib.sh@843c6254`, ai-dynamo/aiperf:docs/x.md,\n"
            "engine.deployment=recipes/b200-fp4/8k1k.yaml and row `recipes/b.yaml:override_x`,\n"
            "results/<run>/points.jsonl, and docs/gone.md.\n"
            "<!-- example: scenarios/mine.yaml -->\n")
    assert _dead_citations(text) == ["1: harness/nowhere.py", "4: docs/gone.md"]


def _make_run_points() -> Counter:
    """Points per scenario family that the Makefile's `run` target sweeps: each `harness
    sweep` line's concurrency list times its -m values (comma lists multiply)."""
    make = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    body = make[make.index("\nrun:"):make.index("\ntest:")]
    got: Counter = Counter()
    for line in body.splitlines():
        if "harness sweep" not in line:
            continue
        args = line.split("harness sweep", 1)[1].split()
        conc = next((a for a in args if "concurrency=" in a), "concurrency=[1,2,4,8]")
        n = len(conc.split("[", 1)[1].rstrip("]'").split(","))
        if "-m" in args:
            for a in args:
                if "=" in a and "," in a and "concurrency" not in a:
                    n *= len(a.split("=", 1)[1].split(","))
        got["agentic" if any(a.startswith("scenarios=agentic") for a in args) else "fixed"] += n
    return got


def test_the_readme_counts_make_runs_points_as_the_makefile_sweeps_them() -> None:
    said = {kind: int(m.group(1)) for kind, pattern in
            (("fixed", r"- (\d+) fixed-sequence points"), ("agentic", r"- (\d+) agentic points"))
            if (m := re.search(pattern, README))}
    assert said == dict(_make_run_points()), ("README.md's make-run list disagrees with the "
                                              "Makefile's run target", said)
