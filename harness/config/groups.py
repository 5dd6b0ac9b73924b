"""Check group choices on the command line before Hydra composes (a clearer message)."""

from __future__ import annotations

from pathlib import Path

from harness.config.errors import ConfigError, did_you_mean
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
