"""Check group choices on the command line, and that every file they (and the defaults lists)
name loads as YAML, before Hydra composes: Hydra would print a traceback for either."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from harness.config.errors import ConfigError, YamlFileError
from harness.config.locations import checkout_root, repo_root

GROUP_DIRS = {
    "model": "recipes/model",
    "chip": "recipes/chip",
    "engine": "recipes/engine",
    "speculator": "recipes/speculator",
    "scenarios": "scenarios",
    "recipe": "recipes/recipe",
    "eval": "recipes/eval",
}


def user_config_dirs(argv: list[str]) -> list[Path]:
    """The directories a user adds to Hydra's search path on the command line: `--config-dir
    DIR` (`-cd DIR`, `--config-dir=DIR`) and `hydra.searchpath=[file://DIR,...]`. In each,
    group G's option X is DIR/G/X.yaml, as in Hydra; `pkg://` entries are packages, not read."""
    out: list[Path] = []
    for i, arg in enumerate(argv):
        if arg in ("--config-dir", "-cd") and i + 1 < len(argv):
            out.append(Path(argv[i + 1]))
        elif arg.startswith("--config-dir="):
            out.append(Path(arg.split("=", 1)[1]))
        elif arg.lstrip("+").startswith("hydra.searchpath="):
            for entry in searchpath_entries(arg):
                if not entry.startswith("pkg://"):
                    out.append(Path(entry.removeprefix("file://")))
    return [d.expanduser().resolve() for d in out]


def searchpath_entries(arg: str) -> list[str]:
    """`hydra.searchpath=[file://a, b]` -> ['file://a', 'b']."""
    value = arg.split("=", 1)[1].strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return [e.strip().strip("'\"") for e in value.split(",") if e.strip()]


def _group_dirs(group: str, root: Path | None, extra: list[Path]) -> list[Path]:
    return [(root or repo_root()) / GROUP_DIRS[group], *(d / group for d in extra)]


def options(group: str, root: Path | None = None, extra: list[Path] | None = None) -> list[str]:
    """Every option of a group, as Hydra names them: a file in a subfolder is an option too
    (`recipe=multinode/<key>` is recipes/recipe/multinode/<key>.yaml)."""
    found = {p.relative_to(d).with_suffix("").as_posix()
             for d in _group_dirs(group, root, extra or []) for p in d.rglob("*.yaml")}
    return sorted(found)


def option_file(group: str, choice: str, root: Path | None = None,
                extra: list[Path] | None = None) -> Path | None:
    """The file a choice loads (the first on the search path that has it), or None."""
    for d in _group_dirs(group, root, extra or []):
        if (d / f"{choice}.yaml").is_file():
            return d / f"{choice}.yaml"
    return None


def group_listing() -> str:
    """The choosable groups and their options, for `harness sweep --help`. (Hydra's own list
    would also show data directories that merely hold YAML, such as the acceptance sources.)
    A subfolder's options are counted, not spelt out (the 94 multi-node recipes would bury the
    rest)."""
    lines = []
    for g in GROUP_DIRS:
        opts = options(g)
        top = [o for o in opts if "/" not in o]
        nested: dict[str, int] = {}
        for o in opts:
            if "/" in o:
                nested[o.rsplit("/", 1)[0]] = nested.get(o.rsplit("/", 1)[0], 0) + 1
        more = [f"{sub}/<name> ({n} more, in {GROUP_DIRS[g]}/{sub}/)"
                for sub, n in sorted(nested.items())]
        lines.append(f"{g}: {', '.join(top + more)}\n")
    return "".join(lines)


# A group with more options than this gets the closest names and a pointer to the full list,
# not every name on one line.
LIST_AT_MOST = 20


def check_group_choices(argv: list[str]) -> None:
    """`engine=vlm` -> an error naming the group, the closest options and where to see all."""
    extra = user_config_dirs(argv)
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.lstrip("+~").split("=", 1)
        if key not in GROUP_DIRS:
            continue
        for choice in value.split(","):  # -m sweeps: engine=a,b
            if choice and option_file(key, choice, extra=extra) is None:
                opts = options(key, extra=extra)
                close = difflib.get_close_matches(choice, opts, n=3, cutoff=0.6)
                hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
                listed = (f"options: {', '.join(opts)}" if len(opts) <= LIST_AT_MOST else
                          f"`harness sweep --help` lists all {len(opts)}")
                looked = ", ".join(str(_shown(d)) + f"/{choice}.yaml"
                                   for d in _group_dirs(key, None, extra))
                raise ConfigError(
                    f"the command-line override '{arg}'", key,
                    f"no {key} named {choice!r} (looked for {looked})", hint + listed)


def _shown(d: Path) -> str:
    """A repository path relative to the checkout (as users see it in the docs); in full for an
    installed harness, whose shipped recipes are not under the user's current directory."""
    if checkout_root() is None:
        return str(d)
    try:
        return d.relative_to(repo_root()).as_posix()
    except ValueError:
        return str(d)


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
    option of each group, the files their defaults lists name) loads as YAML; a group's option
    is looked for in the user's config directories too (user_config_dirs)."""
    base = root or repo_root()
    extra = user_config_dirs(argv)

    def find(group: str, choice: str) -> Path | None:
        if group in GROUP_DIRS:
            return option_file(group, choice, base, extra)
        return base / LAUNCHER_DIR / f"{choice}.yaml"

    todo: list[Path | None] = [base / PRIMARY_FILE]
    todo += [find(g, c) for g, cs in _choices(argv).items() for c in cs]
    seen: set[Path] = set()
    while todo:
        path = todo.pop(0)
        if path is None or path in seen or not path.is_file():
            continue  # a missing choice is check_group_choices' (or Hydra's) to report
        seen.add(path)
        try:
            shown = path.relative_to(base).as_posix()
        except ValueError:
            shown = str(path)
        doc = load_yaml(path, shown)
        for group, choice in _defaults(doc):
            if group in GROUP_DIRS:  # a default the command line may replace: checked too
                todo.append(find(group, choice))
