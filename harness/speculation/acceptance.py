"""The acceptance-length table and what a point's speculative acceptance is.

Rows come from `recipes/acceptance/*.csv` (published values and harness calibrations), keyed
by what the engine runs: (model, speculator method, drafter checkpoint, sample method, k,
thinking). Two curves of one method differ by drafter (MiniMax-M3's EAGLE3 and EAGLE3-GQA
heads) or sample method (Kimi-K3's greedy and probabilistic DSpark), so a lookup never mixes
them. A lookup without an entry is an error that names the nearest entries; never a silent
default.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

from harness.config.errors import ConfigError
from harness.config.locations import repo_root
from harness.config.schema import SweepConfig
from harness.config.validate import SAMPLE_METHODS
from harness.speculation.lookup_drafters import injectable_refusal
from harness.speculation.upstream_injection import upstream_injection

TABLE_DIR = repo_root() / "recipes" / "acceptance"  # the checkout, or an installed copy
COLUMNS = ("model", "speculator", "k", "thinking", "al", "precision", "draft", "sample_method",
           "dataset", "sampling", "engine", "source", "source_kind", "notes", "measured_on")
# A row's sample_method is one of the setting's choices (SAMPLE_METHODS); none stated is greedy.


@dataclass(frozen=True)
class AcceptanceRow:
    model: str
    speculator: str
    k: int
    thinking: str  # on | off | n/a
    al: float
    precision: str = ""
    draft: str = ""  # drafter checkpoint (HF id) the row was measured with; empty: none/unnamed
    sample_method: str = ""  # one of SAMPLE_METHODS; empty: greedy
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

    @property
    def sampled(self) -> str:
        return self.sample_method or "greedy"

    def key(self) -> str:
        """model / speculator [/ drafter] [/ sample method] / k / thinking."""
        return (f"{self.model} / {self.speculator}"
                + (f" / draft {self.draft}" if self.draft else "")
                + (f" / {self.sampled}" if self.sampled != "greedy" else "")
                + f" / k={self.k} / thinking {self.thinking}")

    def describe(self) -> str:
        """The row, its kind of source and where it is: what a point records as its source."""
        return (f"table {self.file}: {self.key()} = AL {self.al:g} "
                f"[{self.source_kind or 'unstated'}] {self.source}").rstrip()


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


def drafter_id(draft: str) -> str:
    """A drafter checkpoint by its last path component, lowercased: an engine loads
    `Inferact/MiniMax-M3-EAGLE3-GQA` from a local copy such as
    `/data/models/MiniMax-M3-EAGLE3-GQA` (InferenceX agentic/minimaxm3_fp4_b300_mtp.sh@843c6254),
    and both name one drafter. Whole names compare, never substrings: `...-EAGLE3` is not
    `...-EAGLE3-GQA`."""
    return draft.rstrip("/").rsplit("/", 1)[-1].lower() if draft else ""


def sample_matches(row_method: str, point_method: str) -> bool:
    """A row's sample method answers a point's. Probabilistic drafts under an injected AL run
    vLLM's synthetic rejection, which replaces whichever rejection sampler the curve was
    measured with, so a point that says `probabilistic` takes a `probabilistic-block` curve
    when no plain `probabilistic` one exists (ranked after it); otherwise they are equal."""
    row, point = row_method or "greedy", point_method or "greedy"
    return row == point or (point == "probabilistic" and row.startswith("probabilistic-"))


def _matches(r: AcceptanceRow, model: str, speculator: str, k: int, want: str,
             draft: str = "", sample_method: str = "greedy") -> bool:
    """Same model, method, k, thinking (or n/a), sample method, and drafter when both name
    one (a row that names none, e.g. an MTP head's, answers any)."""
    return ((r.model, r.speculator, r.k) == (model, speculator, k)
            and r.thinking in (want, "n/a")
            and sample_matches(r.sample_method, sample_method)
            and (not draft or not r.draft or drafter_id(r.draft) == drafter_id(draft)))


def lookup(table: list[AcceptanceRow], model: str, speculator: str, k: int,
           thinking: bool | None, precision: str = "", draft: str = "",
           source: str = "published", sample_method: str = "greedy") -> AcceptanceRow:
    """The row for this key among the rows `source` allows: `published` (default; golden
    curves first, calibrations never, so a local measurement cannot silently displace the
    reference every submission is held to), `calibrated` (harness calibrations only, newest
    first), or one row by `file:line`. The key is what the engine runs: drafter checkpoint
    (`draft`) and `sample_method` as well as method, k and thinking. Thinking-specific rows
    before `n/a` rows; ties prefer a row that names the drafter, the exact sample method, a
    matching precision, then coding datasets. KeyError names the nearest rows, or the
    drafters to choose from when `draft` is empty and several curves answer."""
    want = _thinking(thinking)
    if ROW_REF.match(source):
        return _named_row(table, source, model, speculator, k, want, draft, sample_method)
    if source not in SOURCES:
        raise ValueError(f"unknown acceptance source {source!r}: use published, calibrated "
                         "or a row as file:line (e.g. calibrated.csv:3)")
    cands = [r for r in table if r.calibrated == (source == "calibrated")
             and _matches(r, model, speculator, k, want, draft, sample_method)]
    if not cands:
        raise KeyError(nearest(table, model, speculator, k, want, source, draft,
                               sample_method))
    drafters = sorted({r.draft for r in cands if r.draft}, key=drafter_id)
    if not draft and len({drafter_id(d) for d in drafters}) > 1:
        raise KeyError(f"{model} / {speculator} / k={k} has curves for several drafters "
                       f"({', '.join(drafters)}): set speculator.draft_model to the one the "
                       "engine loads")

    def rank(r: AcceptanceRow) -> tuple[int, ...]:
        return (
            r.thinking != want,
            bool(draft) and not r.draft,
            r.sampled != (sample_method or "greedy"),
            bool(precision) and bool(r.precision) and r.precision != precision,
            not r.golden,
            not any(w in r.dataset.lower() for w in ("coding", "humaneval", "swe-agent")),
        )

    newest_first = sorted(cands, key=lambda r: r.measured_on, reverse=True)
    return sorted(newest_first, key=rank)[0]  # stable: the newest calibration breaks ties


def _named_row(table: list[AcceptanceRow], ref: str, model: str, speculator: str, k: int,
               want: str, draft: str = "", sample_method: str = "greedy") -> AcceptanceRow:
    """The row at `ref` (file:line), which must be for this point's key: naming a row pins
    a measurement, it does not borrow one from another model, drafter or draft length."""
    row = next((r for r in table if r.file == ref), None)
    if row is None:
        files = sorted({r.file.split(":")[0] for r in table})
        raise KeyError(f"no acceptance row {ref} (files: {', '.join(files)}; `harness "
                       "acceptance list` prints every row's file:line)")
    if not _matches(row, model, speculator, k, want, draft, sample_method):
        point = AcceptanceRow(model, speculator, k, want, 0.0, draft=draft,
                              sample_method=sample_method)
        raise KeyError(f"acceptance row {ref} is {row.key()}, not this point's {point.key()}")
    return row


def k_mismatch(table: list[AcceptanceRow], model: str, speculator: str, k: int,
               thinking: bool | None, al: float, draft: str = "",
               sample_method: str = "greedy") -> str | None:
    """Why injecting `al` at draft length `k` is refused, or None: the AL is a published
    curve's value at another k and not its value at this one. InferenceX's four
    dsv4-fp4-gb*-dynamo-vllm-agentic-mtp2 keys inject 2.49 (dsv4_mtp.yaml thinking_on k=3)
    at k=2, where the curve says 2.27 (configs/nvidia-master.yaml@843c6254): the fairness rule
    holds every submission to the curve's value at the draft length it runs."""
    want = _thinking(thinking)
    curve = [r for r in table if r.golden and r.model == model and r.speculator == speculator
             and r.thinking == want and sample_matches(r.sample_method, sample_method)
             and (not draft or not r.draft or drafter_id(r.draft) == drafter_id(draft))]
    here = [r for r in curve if r.k == k]
    if not here or any(abs(r.al - al) < 0.005 for r in here):
        return None
    elsewhere = [r for r in curve if r.k != k and abs(r.al - al) < 0.005]
    if not elsewhere:
        return None
    other, row = elsewhere[0], here[0]
    return (f"injected AL {al:g} at k={k} is the k={other.k} value of the published curve "
            f"({other.file}: {other.key()} = {other.al:g}); at k={k} the curve says "
            f"{row.al:g} ({row.file})")


def nearest(table: list[AcceptanceRow], model: str, speculator: str, k: int,
            thinking: str, source: str = "published", draft: str = "",
            sample_method: str = "greedy") -> str:
    def dist(r: AcceptanceRow) -> tuple[int, ...]:
        return (r.model != model, r.speculator != speculator,
                bool(draft) and bool(r.draft) and drafter_id(r.draft) != drafter_id(draft),
                not sample_matches(r.sample_method, sample_method), abs(r.k - k),
                r.thinking != thinking)

    near = sorted(table, key=dist)[:5]
    lines = [f"  {r.key()}: AL {r.al} "
             f"({'calibrated' if r.calibrated else 'published'}, {r.file})" for r in near]
    other = [r for r in table if r.calibrated != (source == "calibrated")
             and _matches(r, model, speculator, k, thinking, draft, sample_method)]
    if other:  # the key exists, only among the rows this source leaves out: say how to use it
        alt = "published" if source == "calibrated" else "calibrated"
        lines.append(f"  (a {alt} row has this key: speculator.acceptance.source={alt} or "
                     f"={other[0].file})")
    what = (f" drafter {draft!r}," if draft else "") + (
        f" sample method {sample_method!r}," if (sample_method or "greedy") != "greedy" else "")
    return (f"no acceptance length for model {model!r}, speculator {speculator!r},{what} "
            f"k={k}, thinking {thinking} among the {source} rows; nearest entries:\n"
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


def _synthetic_text(scenario_kind: str) -> bool:
    """A built-in kind's `synthetic_text`, named by the kind: this layer sits below the
    workloads and cannot ask their class (callers that can pass its flag to `resolve`)."""
    return scenario_kind == "agentic"


def resolve(sc: SweepConfig, can_inject: bool, where: str,
            table: list[AcceptanceRow] | None = None,
            synthetic_text: bool | None = None) -> AcceptancePlan:
    """What acceptance a point runs at (`synthetic_text`: the workload class's flag; None: the
    built-in kind's). Raises ConfigError before anything launches."""
    spec = sc.speculator
    if spec.method == "none":
        return AcceptancePlan("none")
    upstream = upstream_injection(sc, where)  # a captured deployment that forces its own AL
    if upstream is not None:
        mixed = k_mismatch(table if table is not None else load_table(), sc.model.name,
                           upstream[2], upstream[3], sc.effective_thinking(), upstream[0],
                           spec.draft_model or "", spec.sample_method)
        return AcceptancePlan("injected", upstream[0], upstream[1] + (
            f" ({mixed}: as upstream's key runs it)" if mixed else ""))
    agentic = synthetic_text if synthetic_text is not None else _synthetic_text(sc.scenario.kind)
    mode = spec.acceptance.mode
    if mode == "auto":
        # Replayed agentic text is synthetic: inject. Fixed-sequence: real acceptance on
        # chat-templated prompts (docs/methodology.md §5).
        mode = "injected" if agentic else "real"
    if mode == "real":
        return AcceptancePlan("real", representative=not agentic,
                              source="engine's own drafts (not representative: synthetic text)"
                              if agentic else "engine's own drafts")
    refusal = injectable_refusal(spec.method, agentic)
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
        mixed = k_mismatch(table if table is not None else load_table(), sc.model.name,
                           spec.method, spec.k, sc.effective_thinking(), al,
                           spec.draft_model or "", spec.sample_method)
        if mixed and spec.acceptance.other_k != "allow":
            raise ConfigError(where, "speculator.acceptance.length", mixed,
                              "inject the curve's value at the draft length the engine runs "
                              "(leave speculator.acceptance.length unset to look it up), set "
                              "speculator.k to the draft length this AL belongs to, or "
                              "speculator.acceptance.other_k=allow to run it as upstream's "
                              "key does")
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
                      draft=spec.draft_model or "", source=source,
                      sample_method=spec.sample_method)
    except KeyError as e:
        key = ("speculator.acceptance.source" if ROW_REF.match(source)
               else "speculator.acceptance.length")
        raise ConfigError(where, key, str(e.args[0]),
                          "add a row to recipes/acceptance/ (harness calibrate writes "
                          "calibrations; speculator.acceptance.source=calibrated uses them) "
                          "or set speculator.acceptance.length explicitly") from None


def check_injectable(method: str, scenario_kind: str, mode: str = "injected") -> str | None:
    """`injectable_refusal` for a built-in scenario kind."""
    return injectable_refusal(method, _synthetic_text(scenario_kind), mode)


def sample_method_for(table: list[AcceptanceRow], model: str, speculator: str, k: int,
                      thinking: bool | None, al: float, draft: str = "") -> str | None:
    """The sample method whose published curve says `al` at draft length `k`, or None. For a
    captured command that injects an AL but cannot say how it drafts (ATOM has no
    draft-sampling knob; harness.speculation.drafters returns None there): InferenceX's ATOM Kimi-K3
    script injects 3.75 at k=6, the probabilistic-block curve's value (greedy: 3.54)."""
    for method in SAMPLE_METHODS:
        try:
            row = lookup(table, model, speculator, k, thinking, draft=draft,
                         sample_method=method)
        except KeyError:
            continue
        if row.sampled == method and abs(row.al - al) < 0.005:
            return method
    return None
