"""The import report (Markdown): coverage per model and kind in keys and concurrency points,
every key or launch not captured and why, the setup steps (installs, in-image patches) the
captured scripts run, commands the stand-ins did not know, and the client settings our client
cannot honour. Nothing is left out: every key of both masters appears in the tables."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from harness.catalog.client_settings import client_settings
from harness.catalog.matrix import concurrencies

KINDS = ("fixed", "agentic", "multinode")


def multinode_points(entry: dict[str, Any]) -> int:
    return sum(len(concurrencies(row)) for scen in entry["scenarios"].values()
               for block in scen or [] for row in block.get("search-space", []))


def coverage(results: Iterable[Any]) -> dict[tuple[str, str], list[int]]:
    """(model prefix, kind) -> [keys, keys captured, points, points captured]; multi-node keys
    count as covered when listed (their recipes are attach recipes from master data)."""
    table: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for res in results:
        cell = table[(str(res.mk.entry.get("model-prefix", "?")), res.mk.kind)]
        cell[0] += 1
        if res.mk.kind == "multinode":
            n = multinode_points(res.mk.entry)
            cell[1] += 1
            cell[2] += n
            cell[3] += n
            continue
        cell[1] += int(bool(res.launches) and res.ok == len(res.launches))
        cell[2] += len(res.launches)
        cell[3] += res.ok
    return table


def _coverage_md(results: list[Any]) -> list[str]:
    table = coverage(results)
    lines = ["| model | kind | keys captured / total | concurrency points captured / total |",
             "|---|---|---|---|"]
    totals = {k: [0, 0, 0, 0] for k in KINDS}
    for (model, kind), c in sorted(table.items(), key=lambda kv: (kv[0][0], KINDS.index(kv[0][1]))):
        lines.append(f"| {model} | {kind} | {c[1]} / {c[0]} | {c[3]} / {c[2]} |")
        totals[kind] = [a + b for a, b in zip(totals[kind], c, strict=True)]
    for kind, c in totals.items():
        lines.append(f"| **all** | **{kind}** | **{c[1]} / {c[0]}** | **{c[3]} / {c[2]}** |")
    lines.append("")
    lines.append("Multi-node keys are not run: they deploy with srt-slurm; their recipes are "
                 "attach recipes written from the master data (points = the rows' concurrencies).")
    return lines


def _failures_md(results: list[Any]) -> list[str]:
    lines = []
    for res in results:
        if res.mk.kind == "multinode":
            continue
        bad = [c for c in res.launches if c["status"] != "ok"]
        if not bad and res.launches:
            continue
        lines.append(f"### {res.mk.key} ({res.mk.kind}, {res.mk.master}): "
                     f"{res.ok}/{len(res.launches)} launches captured")
        if res.reason:
            lines.append(f"- {res.reason}")
        by_reason: dict[str, list[int]] = defaultdict(list)
        for c in bad:
            by_reason[c["reason"]].append(c["conc"])
        for reason, concs in by_reason.items():
            text = reason.replace("|", "\\|").replace("\n", " ")
            lines.append(f"- conc {', '.join(map(str, concs))}: {text}")
        lines.append("")
    notes = [f"- {res.mk.key}: {res.note}" for res in results if getattr(res, "note", "")]
    if notes:
        lines += ["Keys whose runner node was inferred:", "", *notes, ""]
    return lines or ["Every single-node launch was captured.", ""]


def _setup_md(results: list[Any]) -> list[str]:
    kinds: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for res in results:
        for c in res.launches:
            for step in c.get("setup", []):
                label = " ".join(step["argv"][:3])[:120]
                kind = "unknown command" if step.get("unknown") else step["kind"]
                kinds[kind][label].add(res.mk.key)
    lines = []
    for kind in sorted(kinds):
        lines.append(f"**{kind}** (recorded, not run):")
        lines.append("")
        for label, keys in sorted(kinds[kind].items()):
            lines.append(f"- `{label}`: {len(keys)} keys ({', '.join(sorted(keys)[:6])}"
                         f"{', ...' if len(keys) > 6 else ''})")
        lines.append("")
    return lines or ["No setup steps.", ""]


def _client_md(results: list[Any]) -> list[str]:
    unhonoured: dict[str, set[str]] = defaultdict(set)
    for res in results:
        for c in res.launches:
            for item in client_settings(c.get("client"))[1]:
                unhonoured[item].add(res.mk.key)
    if not unhonoured:
        return ["Our client honours every captured client setting.", ""]
    return [f"- {item}: {len(keys)} keys ({', '.join(sorted(keys)[:5])}"
            f"{', ...' if len(keys) > 5 else ''})" for item, keys in sorted(unhonoured.items())] \
        + [""]


def render(state: Any, results: list[Any], checkout: str) -> str:
    # Where the clone lay and its local branch names are the importing host's, not facts
    # about upstream: the report names the commit, whether the tree was clean and whether the
    # commit is on upstream's main.
    on_main = any(b in ("main", "origin/main") for b in state.branches)
    lines = [f"# InferenceX catalog import: SemiAnalysisAI/InferenceX@{state.commit}", "",
             f"Captured from a {'modified' if state.dirty else 'clean'} checkout of that commit"
             f"{', which is on upstream main' if on_main else ''}.", ""]
    lines += [f"**Note:** {n}." for n in state.notes()]
    lines += ["", "## Coverage", "", *_coverage_md(results), "", "## Not captured, and why", "",
              *_failures_md(results), "## Setup steps the scripts run before the server", "",
              *_setup_md(results), "## Client settings our client cannot honour", "",
              *_client_md(results)]
    return "\n".join(lines) + "\n"
