"""A recipe dict written as a Hydra `# @package _global_` recipe file: the defaults list first,
flow-style short rows, strings that would read back as numbers or booleans quoted."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """Safe YAML (strings that would read back as another type are quoted), no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_recipe(recipe: dict[str, Any], header: list[str]) -> str:
    lines = ["# @package _global_", *[f"# {h}" for h in header]]
    body = yaml.dump(recipe, Dumper=_Dumper, sort_keys=False, width=4096,
                     default_flow_style=None, allow_unicode=True)
    return "\n".join(lines) + "\n" + body
