"""A recipe's engine launches. A plain recipe is one launch serving every concurrency; a catalog
recipe (InferenceX `configs/*-master.yaml`: search-space rows, each a topology with its
concurrency range) is one launch per row, or per row and concurrency when
`relaunch_per_concurrency` is set, as InferenceX runs one job per concurrency value
(docs/upstream/inferencex.md §1.4). Pure: each launch is a complete, checked SweepConfig."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.config.schema import SearchRow, SweepConfig


@dataclass(frozen=True, slots=True)
class Launch:
    tag: str  # names the launch's log and work directory, e.g. "tp4-ep4-dpa-c64"
    sc: SweepConfig


def row_tag(row: SearchRow) -> str:
    tag = f"tp{row.tp}-ep{row.ep}" + ("-dpa" if row.dp_attention else "")
    return tag + (f"-pp{row.pp}" if row.pp > 1 else "")


def apply_row(sc: SweepConfig, row: SearchRow) -> SweepConfig:
    """The recipe as one search-space row runs it."""
    topo = replace(sc.topology, tp=row.tp, ep=row.ep, dp_attention=row.dp_attention, pp=row.pp)
    spec = sc.speculator
    if row.speculator_k is not None:
        spec = replace(spec, k=row.speculator_k)
    engine = replace(sc.engine, extra_args=[*sc.engine.extra_args, *row.extra_args],
                     env={**sc.engine.env, **row.env},
                     extra_options=merge_options(sc.engine.extra_options, row.extra_options))
    return replace(sc, topology=topo, speculator=spec, engine=engine,
                   concurrency=list(row.concurrency), search_space=[])


def merge_options(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` merged into `base` key by key at every depth (a row's YAML values beside the
    recipe's); a value that is not a mapping replaces the one under it, null included."""
    out = dict(base)
    for k, v in over.items():
        below = out.get(k)
        if isinstance(v, Mapping) and isinstance(below, Mapping):
            out[k] = merge_options(below, v)
        else:
            out[k] = v
    return out


def launches(sc: SweepConfig, check: Callable[[SweepConfig], None] | None = None
             ) -> list[Launch]:
    """Every launch of the recipe, in order; `check` validates each (its topology and
    concurrency list are checked as a whole recipe's would be)."""
    rows = [(row_tag(r), apply_row(sc, r)) for r in sc.search_space] or [("", sc)]
    out: list[Launch] = []
    for tag, one in rows:
        if check is not None:
            check(one)
        if sc.relaunch_per_concurrency:
            out += [Launch(f"{tag}-c{c}".lstrip("-"), replace(one, concurrency=[c]))
                    for c in one.concurrency]
        else:
            out.append(Launch(tag, one))
    return out
