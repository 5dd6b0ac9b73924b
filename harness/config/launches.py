"""A recipe's engine launches. A plain recipe is one launch serving every concurrency; a catalog
recipe (InferenceX `configs/*-master.yaml`: search-space rows, each a topology with its
concurrency range) is one launch per row, or per row and concurrency when
`relaunch_per_concurrency` is set, as InferenceX runs one job per concurrency value
(docs/upstream/inferencex.md §1.4). Pure: each launch is a complete, checked SweepConfig."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.config.schema import PoolConfig, SearchRow, SweepConfig


@dataclass(frozen=True, slots=True)
class Launch:
    tag: str  # names the launch's log and work directory, e.g. "tp4-ep4-dpa-c64"
    sc: SweepConfig


def row_tag(row: SearchRow) -> str:
    if row.prefill is not None and row.decode is not None:  # a disaggregated (attach) row
        p, d = row.prefill, row.decode
        return (f"p{p.workers}x{pool_tag(p)}-d{d.workers}x{pool_tag(d)}"
                + ("-nospec" if row.spec_decoding is False else ""))
    tag = f"tp{row.tp}-ep{row.ep}" + ("-dpa" if row.dp_attention else "")
    tag += f"-pp{row.pp}" if row.pp > 1 else ""
    tag += (f"-pcp{row.pcp}" if row.pcp > 1 else "") + (f"-dcp{row.dcp}" if row.dcp > 1 else "")
    if row.kv_offload is not None and row.kv_offload.backend != "none":
        tag += f"-kv{row.kv_offload.backend}"
    return tag + ("-nospec" if row.spec_decoding is False else "")


def pool_tag(p: PoolConfig) -> str:
    tag = f"tp{p.tp}-ep{p.ep}" + ("-dpa" if p.dp_attention else "")
    return tag + "".join(f"-{n}{v}" for n, v in (("pp", p.pp), ("dcp", p.dcp), ("pcp", p.pcp))
                         if v > 1)


def apply_row(sc: SweepConfig, row: SearchRow) -> SweepConfig:
    """The recipe as one search-space row runs it."""
    topo = replace(sc.topology, tp=row.tp, ep=row.ep, dp_attention=row.dp_attention, pp=row.pp,
                   pcp=row.pcp, dcp=row.dcp)
    if row.prefill is not None and row.decode is not None:
        topo = replace(topo, prefill=row.prefill, decode=row.decode,
                       prefill_gpus=row.prefill.gpus(), decode_gpus=row.decode.gpus())
    spec = sc.speculator
    if row.speculator_k is not None:
        spec = replace(spec, k=row.speculator_k)
    if row.spec_decoding is False:  # upstream's `spec-decoding: none` row of a spec key
        spec = replace(spec, method="none", k=0, draft_model=None)
    e = sc.engine
    engine = replace(e, extra_args=[*e.extra_args, *row.extra_args],
                     env={**e.env, **row.env},
                     extra_options=merge_options(e.extra_options, row.extra_options),
                     kv_offload=row.kv_offload if row.kv_offload is not None else e.kv_offload,
                     helpers=list(row.helpers if row.helpers is not None else e.helpers),
                     setup=list(row.setup if row.setup is not None else e.setup),
                     files={**e.files, **(row.files or {})},
                     port_offset=row.port_offset if row.port_offset is not None
                     else e.port_offset,
                     # the row's captured launch, for the engine that launches it; attached
                     # (engine=endpoint), the deployment is already up and only named
                     launch=row.deployment if row.deployment is not None
                     and e.kind == "multinode" else e.launch)
    scen = sc.scenario  # upstream exports its routing-header switches on DP rows alone
    if row.correlation_headers is not None:
        scen = replace(scen, correlation_headers=list(row.correlation_headers))
    wanted = set(sc.row_concurrency)
    conc = [c for c in row.concurrency if not wanted or c in wanted]
    return replace(sc, topology=topo, speculator=spec, engine=engine, scenario=scen,
                   concurrency=conc, search_space=[])


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


def chosen_rows(sc: SweepConfig) -> list[SearchRow]:
    """The rows a sweep runs: those of the composed scenario (a key may list rows for several,
    `scenarios=` picks), and for an attached deployment (engine.deployment) only the rows
    that deployment serves (a multi-node key's rows are each their own srt-slurm recipe)."""
    rows = [r for r in sc.search_space if r.scenario in (None, sc.scenario.name)]
    want = sc.engine.deployment
    return [r for r in rows if r.deploy_recipe == want] if want else rows


def launches(sc: SweepConfig, check: Callable[[SweepConfig], None] | None = None
             ) -> list[Launch]:
    """Every launch of the recipe, in order; `check` validates each (its topology and
    concurrency list are checked as a whole recipe's would be)."""
    rows = [(row_tag(r), apply_row(sc, r)) for r in chosen_rows(sc)] or [("", sc)]
    rows = [(t, one) for t, one in rows if one.concurrency]  # row_concurrency kept none
    tags = [t for t, _ in rows]
    rows = [(f"{t}-r{i}" if tags.count(t) > 1 else t, one) for i, (t, one) in enumerate(rows)]
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
