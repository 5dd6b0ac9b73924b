"""Check group choices on the command line, and that every file they (and the defaults lists)
name loads as YAML, before Hydra composes: Hydra would print a traceback for either."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config.errors import ConfigError, YamlFileError, did_you_mean
from harness.config.locations import repo_root

GROUP_DIRS = {
    "model": "recipes/model",
    "chip": "recipes/chip",
    "engine": "recipes/engine",
    "speculator": "recipes/speculator",
    "scenarios": "scenarios",
    "recipe": "recipes/recipe",
    "eval": "recipes/eval",
}


def options(group: str, root: Path | None = None) -> list[str]:
    d = (root or repo_root()) / GROUP_DIRS[group]
    return sorted(p.stem for p in d.glob("*.yaml"))


def group_listing() -> str:
    """The choosable groups and their options, for `harness sweep --help`. (Hydra's own list
    would also show data directories that merely hold YAML, such as the acceptance sources.)"""
    return "".join(f"{g}: {', '.join(options(g))}\n" for g in GROUP_DIRS)


def check_group_choices(argv: list[str]) -> None:
    """`engine=vlm` -> an error naming the group, the options and the closest one."""
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.lstrip("+~").split("=", 1)
        if key not in GROUP_DIRS:
            continue
        opts = options(key)
        for choice in value.split(","):  # -m sweeps: engine=a,b
            if choice and choice not in opts:
                hint = did_you_mean(choice, opts)
                raise ConfigError(
                    f"the command-line override '{arg}'", key,
                    f"no {key} recipe named {choice!r} (looked for "
                    f"{GROUP_DIRS[key]}/{choice}.yaml)",
                    (hint + " " if hint else "") + f"options: {', '.join(opts)}",
                )


PRIMARY_FILE = "recipes/sweep.yaml"
LAUNCHER_DIR = "recipes/hydra/launcher"


def _choices(argv: list[str]) -> dict[str, list[str]]:
    """group -> the choices the command line makes (`engine=a,b`: both)."""
    out: dict[str, list[str]] = {}
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.lstrip("+~").split("=", 1)
        if key in GROUP_DIRS or key == "hydra/launcher":
            out.setdefault(key, []).extend(c for c in value.split(",") if c)
    return out


def _defaults(doc: Any) -> list[tuple[str, str]]:
    """(group, choice) of a loaded file's defaults list (`- engine: x`, `- override /engine:
    x`, `- optional recipe: null`)."""
    out = []
    entries = doc.get("defaults") if isinstance(doc, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        for key, choice in entry.items():
            group = str(key).split()[-1].lstrip("/")
            if isinstance(choice, str):
                out.append((group, choice))
    return out


def load_yaml(path: Path, shown: str) -> Any:
    """The file as Hydra would load it (OmegaConf's YAML loader), or a YamlFileError."""
    import yaml
    from omegaconf._utils import get_yaml_loader

    try:
        with open(path, encoding="utf-8") as f:
            return yaml.load(f, Loader=get_yaml_loader())
    except UnicodeDecodeError as e:
        raise YamlFileError(shown, f"not UTF-8 text ({e.reason})", "save it as UTF-8") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        what = " ".join(str(getattr(e, "problem", None) or e).split())
        python_tag = "python/" in what
        fix = ("remove the tag: recipes are plain YAML data (strings, numbers, lists, "
               "mappings), and no tag that would construct or run Python is ever loaded"
               if python_tag else "correct the YAML at that line")
        raise YamlFileError(shown, what + at, fix) from None


def check_yaml_files(argv: list[str], root: Path | None = None) -> None:
    """Every config file this command line composes (the primary file, the chosen or default
    option of each group, the files their defaults lists name) loads as YAML."""
    base = root or repo_root()
    chosen = _choices(argv)
    todo = [PRIMARY_FILE]
    todo += [f"{GROUP_DIRS.get(g, LAUNCHER_DIR)}/{c}.yaml" for g, cs in chosen.items()
             for c in cs]
    seen: set[str] = set()
    while todo:
        rel = todo.pop(0)
        if rel in seen or not (base / rel).is_file():
            continue  # a missing choice is check_group_choices' (or Hydra's) to report
        seen.add(rel)
        doc = load_yaml(base / rel, rel)
        for group, choice in _defaults(doc):
            if group in GROUP_DIRS:  # a default the command line may replace: checked too
                todo.append(f"{GROUP_DIRS[group]}/{choice}.yaml")
