"""Two server commands compared as upstream's and ours can be: the program and its positional
arguments in order, the options as a set of flag groups (an option with the values after it;
a catalog recipe's per-row flags follow the template's, so order differs, values do not), file
paths by their content. Used by `harness catalog diff` and tests/catalog/test_catalog_render.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.catalog.recipe_writer import flag_groups

FILE = "<file>"  # a path to a file the server reads, compared by content instead


def argv_shape(argv: list[str], files: Mapping[str, Any] = ()) -> tuple[tuple[str, ...],
                                                                        Counter]:
    names = set(files) | {n.rsplit("/", 1)[-1] for n in files}

    def norm1(a: str) -> str:
        flag, eq, val = a.partition("=")
        if a in names:
            return FILE
        return f"{flag}={FILE}" if eq and a.startswith("-") and val in names else a

    norm = [norm1(a) for a in argv]
    prefix, groups = flag_groups(norm)
    return tuple(prefix), Counter(groups)


def argv_changes(old: list[str], new: list[str], old_files: Mapping[str, Any] = (),
                 new_files: Mapping[str, Any] = ()) -> list[str]:
    """What differs, one line each ('' list: the same command)."""
    (op, og), (np_, ng) = argv_shape(old, old_files), argv_shape(new, new_files)
    out = []
    if op != np_:
        out.append(f"program/positionals: {' '.join(op)} -> {' '.join(np_)}")
    out += [f"- {' '.join(g)}" for g in sorted((og - ng).elements())]
    out += [f"+ {' '.join(g)}" for g in sorted((ng - og).elements())]
    return out


def env_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    out = [f"- {k}={old[k]}" for k in sorted(set(old) - set(new))]
    out += [f"+ {k}={new[k]}" for k in sorted(set(new) - set(old))]
    out += [f"~ {k}: {old[k]} -> {new[k]}" for k in sorted(set(old) & set(new))
            if old[k] != new[k]]
    return out
