"""The acceptance-length table and what a point's speculative acceptance is.

Rows come from `recipes/acceptance/*.csv` (published values and harness calibrations), keyed
by (model, speculator, k, thinking). A lookup without an entry is an error that names the
nearest entries; never a silent default.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig

TABLE_DIR = Path(__file__).resolve().parents[2] / "recipes" / "acceptance"
COLUMNS = ("model", "speculator", "k", "thinking", "al", "precision", "draft", "dataset",
           "sampling", "engine", "source", "source_kind", "notes", "measured_on")


@dataclass(frozen=True)
class AcceptanceRow:
    model: str
    speculator: str
    k: int
    thinking: str  # on | off | n/a
    al: float
    precision: str = ""
    draft: str = ""
    dataset: str = ""
    sampling: str = ""
    engine: str = ""
    source: str = ""
    source_kind: str = ""
    notes: str = ""
    measured_on: str = ""
    file: str = ""

    @property
    def calibrated(self) -> bool:
        """A harness calibration (dated), not a published value. Published rows win lookups;
        a calibration is used only when a recipe names it (`speculator.acceptance.source`)."""
        return bool(self.measured_on) or self.source_kind.lower().startswith("calibration")

    @property
    def golden(self) -> bool:
        """One of InferenceX's golden AL curves (the reference the fairness rule fixes)."""
        kind = self.source_kind.lower()
        return not self.calibrated and ("golden" in kind or "inferencex" in kind)

    def describe(self) -> str:
        """The row, its kind of source and where it is: what a point records as its source."""
        return (f"table {self.file}: {self.model} / {self.speculator} / k={self.k} / thinking "
                f"{self.thinking} = AL {self.al:g} [{self.source_kind or 'unstated'}] "
                f"{self.source}").rstrip()


def load_table(directory: Path = TABLE_DIR) -> list[AcceptanceRow]:
    rows: list[AcceptanceRow] = []
    for path in sorted(directory.glob("*.csv")):
        with path.open(newline="") as f:
            for n, r in enumerate(csv.DictReader(f), 2):
                try:
                    rows.append(AcceptanceRow(
                        **{c: r.get(c, "") or "" for c in COLUMNS if c not in ("k", "al")},
                        k=int(r["k"]), al=float(r["al"]), file=f"{path.name}:{n}"))
                except (KeyError, ValueError) as e:
                    raise ValueError(f"{path}:{n}: bad acceptance row ({e})") from None
    return rows


def append_rows(rows: list[AcceptanceRow], path: Path) -> None:
    new = not path.is_file()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({c: getattr(r, c) for c in COLUMNS})


def _thinking(value: bool | None) -> str:
    return "n/a" if value is None else ("on" if value else "off")


# `speculator.acceptance.source`: which rows a lookup may use. A named row (`file:line`, as
# `harness acceptance list` prints it) pins one measurement, e.g. calibrated.csv:3.
SOURCES = ("published", "calibrated")
ROW_REF = re.compile(r"^[\w.+-]+\.csv:\d+$")


def _matches(r: AcceptanceRow, model: str, speculator: str, k: int, want: str) -> bool:
    return ((r.model, r.speculator, r.k) == (model, speculator, k)
            and r.thinking in (want, "n/a"))


def lookup(table: list[AcceptanceRow], model: str, speculator: str, k: int,
           thinking: bool | None, precision: str = "", draft: str = "",
           source: str = "published") -> AcceptanceRow:
    """The row for this key among the rows `source` allows: `published` (default; golden
    curves first, calibrations never, so a local measurement cannot silently displace the
    reference every submission is held to), `calibrated` (harness calibrations only, newest
    first), or one row by `file:line`. Thinking-specific rows before `n/a` rows; ties prefer
    a matching precision and draft, then coding datasets. KeyError names the nearest rows."""
    want = _thinking(thinking)
    if ROW_REF.match(source):
        return _named_row(table, source, model, speculator, k, want)
    if source not in SOURCES:
        raise ValueError(f"unknown acceptance source {source!r}: use published, calibrated "
                         "or a row as file:line (e.g. calibrated.csv:3)")
    cands = [r for r in table if r.calibrated == (source == "calibrated")
             and _matches(r, model, speculator, k, want)]
    if not cands:
        raise KeyError(nearest(table, model, speculator, k, want, source))

    def rank(r: AcceptanceRow) -> tuple[int, ...]:
        return (
            r.thinking != want,
            bool(precision) and bool(r.precision) and r.precision != precision,
            bool(draft) and draft.lower() not in r.draft.lower(),
            not r.golden,
            not any(w in r.dataset.lower() for w in ("coding", "humaneval", "swe-agent")),
        )

    newest_first = sorted(cands, key=lambda r: r.measured_on, reverse=True)
    return sorted(newest_first, key=rank)[0]  # stable: the newest calibration breaks ties


def _named_row(table: list[AcceptanceRow], ref: str, model: str, speculator: str, k: int,
               want: str) -> AcceptanceRow:
    """The row at `ref` (file:line), which must be for this point's key: naming a row pins
    a measurement, it does not borrow one from another model or draft length."""
    row = next((r for r in table if r.file == ref), None)
    if row is None:
        files = sorted({r.file.split(":")[0] for r in table})
        raise KeyError(f"no acceptance row {ref} (files: {', '.join(files)}; `harness "
                       "acceptance list` prints every row's file:line)")
    if not _matches(row, model, speculator, k, want):
        raise KeyError(f"acceptance row {ref} is {row.model} / {row.speculator} / k={row.k} / "
                       f"thinking {row.thinking}, not this point's {model} / {speculator} / "
                       f"k={k} / thinking {want}")
    return row


def nearest(table: list[AcceptanceRow], model: str, speculator: str, k: int,
            thinking: str, source: str = "published") -> str:
    def dist(r: AcceptanceRow) -> tuple[int, int, int, int]:
        return (r.model != model, r.speculator != speculator, abs(r.k - k),
                r.thinking != thinking)

    near = sorted(table, key=dist)[:5]
    lines = [f"  {r.model} / {r.speculator} / k={r.k} / thinking {r.thinking}: AL {r.al} "
             f"({'calibrated' if r.calibrated else 'published'}, {r.file})" for r in near]
    other = [r for r in table if r.calibrated != (source == "calibrated")
             and _matches(r, model, speculator, k, thinking)]
    if other:  # the key exists, only among the rows this source leaves out: say how to use it
        alt = "published" if source == "calibrated" else "calibrated"
        lines.append(f"  (a {alt} row has this key: speculator.acceptance.source={alt} or "
                     f"={other[0].file})")
    return (f"no acceptance length for model {model!r}, speculator {speculator!r}, k={k}, "
            f"thinking {thinking} among the {source} rows; nearest entries:\n"
            + "\n".join(lines))


def synthetic_rates(al: float, k: int) -> list[float]:
    """vLLM's per-position unconditional acceptance rates for a target AL:
    [1]*floor(AL-1) + [frac(AL-1)] + [0]*rest, k entries (docs/methodology.md §5)."""
    if not 1.0 <= al <= k + 1:
        raise ValueError(f"acceptance length {al} is outside [1, k+1] = [1, {k + 1}]")
    accepted = al - 1.0
    whole = math.floor(accepted)
    rates = [1.0] * whole
    if whole < k:
        rates.append(accepted - whole)
    rates += [0.0] * (k - len(rates))
    return rates[:k]


@dataclass(frozen=True)
class AcceptancePlan:
    mode: str  # none | real | injected
    length: float | None = None  # the AL requested (injected)
    source: str = ""  # "explicit", or AcceptanceRow.describe(): file:line, key, source kind
    representative: bool = True  # False: real acceptance on synthetic agentic content

    def fields(self) -> dict[str, object]:
        return {
            "spec_acceptance_mode": self.mode,
            "spec_acceptance_length": self.length,
            "spec_acceptance_source": self.source,
            "spec_representative": self.representative,
        }


def resolve(sc: SweepConfig, can_inject: bool, where: str,
            table: list[AcceptanceRow] | None = None) -> AcceptancePlan:
    """What acceptance a point runs at. Raises ConfigError before anything launches."""
    spec = sc.speculator
    if spec.method == "none":
        return AcceptancePlan("none")
    agentic = sc.scenario.kind == "agentic"
    mode = spec.acceptance.mode
    if mode == "auto":
        # Replayed agentic text is synthetic: inject. Fixed-sequence: real acceptance on
        # chat-templated prompts (docs/methodology.md §5).
        mode = "injected" if agentic else "real"
    if mode == "real":
        return AcceptancePlan("real", representative=not agentic,
                              source="engine's own drafts (not representative: synthetic text)"
                              if agentic else "engine's own drafts")
    refusal = check_injectable(spec.method, sc.scenario.kind)
    if refusal:
        raise ConfigError(where, "speculator.method", refusal,
                          "use speculator=mtp, eagle3 or draft_model for injected agentic "
                          "points")
    if not can_inject:
        raise ConfigError(
            where, "speculator.acceptance.mode",
            f"engine {sc.engine.kind} cannot force an acceptance length, and this point "
            "needs an injected one",
            "use an engine that can (vllm, sglang, trtllm, atom, llamacpp), or set "
            "speculator.acceptance.mode=real (points are then flagged as not representative)",
        )
    if spec.acceptance.length is not None:
        al, source = float(spec.acceptance.length), "explicit"
    else:
        row = _table_row(sc, where, table)
        al, source = row.al, row.describe()
    try:
        synthetic_rates(al, spec.k)
    except ValueError as e:
        raise ConfigError(where, "speculator.acceptance.length", str(e),
                          f"an AL between 1 and k+1 = {spec.k + 1}") from None
    return AcceptancePlan("injected", al, source)


def _table_row(sc: SweepConfig, where: str, table: list[AcceptanceRow] | None
               ) -> AcceptanceRow:
    """The table row a point injects, from the rows `speculator.acceptance.source` allows."""
    spec = sc.speculator
    source = spec.acceptance.source
    if source not in SOURCES and not ROW_REF.match(source):
        raise ConfigError(where, "speculator.acceptance.source",
                          f"unknown acceptance source {source!r}",
                          "use published (the default), calibrated, or one row as file:line "
                          "(e.g. calibrated.csv:3; `harness acceptance list` shows them)")
    try:
        return lookup(table if table is not None else load_table(), sc.model.name,
                      spec.method, spec.k, sc.effective_thinking(),
                      precision=sc.precision or sc.model.default_precision,
                      draft=spec.draft_model or "", source=source)
    except KeyError as e:
        key = ("speculator.acceptance.source" if ROW_REF.match(source)
               else "speculator.acceptance.length")
        raise ConfigError(where, key, str(e.args[0]),
                          "add a row to recipes/acceptance/ (harness calibrate writes "
                          "calibrations; speculator.acceptance.source=calibrated uses them) "
                          "or set speculator.acceptance.length explicitly") from None


# Drafters that propose from text already seen (prompt/output n-grams). The harness's agentic
# prompts are blocks of single-token words drawn per hash id, so such drafters propose almost
# nothing and an injected AL is neither realised nor verifiable.
LOOKUP_DRAFTERS = frozenset({"ngram", "prompt_lookup", "suffix", "lookahead"})


def check_injectable(method: str, scenario_kind: str, mode: str = "injected") -> str | None:
    """Why an injected point with this drafter cannot be run, or None. Called at validation:
    an n-gram drafter proposes nothing on the synthetic agentic prompts, so the point would
    only ever be judged on a handful of drafts (or none)."""
    if mode != "injected" or scenario_kind != "agentic" or method not in LOOKUP_DRAFTERS:
        return None
    return (f"speculator {method} drafts only from n-grams already in the text, and the "
            "replayed agentic prompts are synthetic single-token-word blocks: it proposes "
            "(almost) no drafts there, so an injected acceptance length cannot be realised or "
            "verified; use a model drafter (mtp, eagle3, draft_model) for injected agentic "
            "points, or speculator.acceptance.mode=real (flagged as not representative)")
