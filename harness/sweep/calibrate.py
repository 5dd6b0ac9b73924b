"""`harness calibrate`: acceptance lengths measured the way InferenceX's golden curves were
(docs/upstream/inferencex.md §5.1).

One clean engine launch per (thinking mode, draft length k) with the real drafter; prompts from
SPEED-Bench's coding category through Hugging Face `datasets` (what the golden curves ran) or,
offline, the shipped SWE-agent trajectories (each assistant turn's real history, oldest turns
dropped to fit a token budget); every prompt rendered with the model's chat template; the
production sampling; long outputs; one request at a time (InferenceX: --max-concurrency 1).
AL = 1 + Δaccepted / Δdrafts over the whole run, from the engine's own counters through
`harness.engines.counters.realised_acceptance`. Rows go to the acceptance table with their
provenance (engine, version, dataset, sampling, date); optionally also a YAML file in the
golden files' shape. The /metrics scrapes around each run are kept in the work directory.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.schema import SweepConfig
from harness.engines import counters
from harness.engines.hints import EngineHints
from harness.engines.registry import make_adapter
from harness.engines.sampler import MetricsSampler
from harness.engines.session import EngineSession
from harness.record.provenance import git_revision
from harness.speculation.acceptance import COLUMNS, AcceptanceRow, append_rows
from harness.speculation.speed_bench import DatasetSpec, load_conversations
from harness.workloads.tokenizer import load_tokenizer

# InferenceX's golden curves: output_len 4096. A CPU engine generates a few tokens a second
# per request at k=8, so CPU calibrations default to short outputs (and say so in each row).
GPU_MAX_TOKENS = 4096
CPU_MAX_TOKENS = 256


def load_messages(path: Path) -> list[dict[str, str]]:
    """An OpenAI-style message list from a SWE-agent trajectory (demonstrations dropped, tool
    calls and tool results written as text so any chat template can render them)."""
    data = json.loads(path.read_text())
    out: list[dict[str, str]] = []
    for m in data.get("history", []):
        if m.get("is_demo"):
            continue
        role = m.get("role", "user")
        content = str(m.get("content") or "")
        for call in m.get("tool_calls") or ():
            fn = call.get("function", {})
            content += f"\n[tool call] {fn.get('name')}({fn.get('arguments')})"
        if role == "tool":
            role, content = "user", "[tool output]\n" + content
        if role not in ("system", "user", "assistant"):
            role = "user"
        out.append({"role": role, "content": content})
    return out


def render(tokenizer: Any, messages: list[dict[str, str]],
           template_kwargs: dict[str, Any] | None = None) -> str:
    """The model's chat template over `messages`, ready for the assistant's reply. Extra
    kwargs (thinking switches) reach the template as variables; templates ignore unknown ones."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                         **(template_kwargs or {}))


def fits(tokenizer: Any, text: str, budget: int) -> bool:
    return len(tokenizer.encode(text, add_special_tokens=False)) <= budget


def turn_prompts(messages: list[dict[str, str]], tokenizer: Any, budget: int,
                 max_turns: int, template_kwargs: dict[str, Any] | None = None) -> list[str]:
    """One templated prompt per assistant turn: the history before it, fitted to `budget`."""
    prompts = []
    for j, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        history = messages[:j]
        system = [h for h in history[:1] if h["role"] == "system"]
        rest = history[len(system):]
        while rest:
            text = render(tokenizer, system + rest, template_kwargs)
            if fits(tokenizer, text, budget):
                prompts.append(text)
                break
            rest = rest[1:]  # drop the oldest turn
        if len(prompts) >= max_turns:
            break
    return prompts


@dataclass
class CalibrationSettings:
    texts: list[Path]  # SWE-agent trajectories: the prompts when `dataset` is None
    ks: list[int]
    context_tokens: int = 2048
    max_tokens: int = CPU_MAX_TOKENS
    turns_per_text: int = 12
    temperature: float = 1.0  # InferenceX's golden curves: temperature 1.0
    seed: int = 0  # request i samples with seed + i: reproducible, independent per prompt
    top_p: float | None = None  # None: not sent (the engine's default)
    top_k: int | None = None
    dataset: DatasetSpec | None = None
    thinking: list[bool | None] = field(default_factory=lambda: [None])  # None: the model's
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)  # merged over defaults


@dataclass(frozen=True)
class PromptSet:
    prompts: list[str]
    description: str  # the rows' dataset column
    template_kwargs: dict[str, Any]


def template_kwargs(cs: CalibrationSettings, thinking: bool | None) -> dict[str, Any]:
    """Chat-template switches for a thinking mode: `enable_thinking` (Qwen, SmolLM3, GLM) and
    `thinking` (DeepSeek, as InferenceX's thinking_on kwargs), then the user's own on top."""
    base: dict[str, Any] = {} if thinking is None else {"enable_thinking": thinking,
                                                        "thinking": thinking}
    return {**base, **cs.chat_template_kwargs}


def build_prompts(cs: CalibrationSettings, tokenizer: Any, thinking: bool | None) -> PromptSet:
    """Templated prompts from the dataset (SPEED-Bench) or the SWE-agent trajectories."""
    kwargs = template_kwargs(cs, thinking)
    if cs.dataset is not None:
        loaded = load_conversations(cs.dataset)
        rendered = [render(tokenizer, c, kwargs) for c in loaded.conversations]
        prompts = [p for p in rendered if fits(tokenizer, p, cs.context_tokens)]
        dropped = len(rendered) - len(prompts)
        desc = (loaded.description + (f", {dropped} over {cs.context_tokens} tokens dropped"
                                      if dropped else ""))
    else:
        prompts = [p for t in cs.texts
                   for p in turn_prompts(load_messages(t), tokenizer, cs.context_tokens,
                                         cs.turns_per_text, kwargs)]
        desc = (f"SWE-agent trajectories {', '.join(t.stem for t in cs.texts)}: "
                f"{len(prompts)} assistant turns, history <= {cs.context_tokens} tokens")
    if not prompts:
        raise ValueError("no prompt fits the context budget; raise --context-tokens")
    return PromptSet(prompts, f"{desc}, output_len {cs.max_tokens}", kwargs)


def sampling_fields(cs: CalibrationSettings, sc: SweepConfig) -> dict[str, Any]:
    """What each request samples with: the recipe's per-request sampling fields
    (`scenario.sampling`, as a sweep sends them) under the flags given here."""
    out: dict[str, Any] = {**sc.scenario.sampling, "temperature": cs.temperature}
    if cs.top_p is not None:
        out["top_p"] = cs.top_p
    if cs.top_k is not None:
        out["top_k"] = cs.top_k
    return out


def sampling_text(fields: dict[str, Any], cs: CalibrationSettings, kwargs: dict[str, Any]
                  ) -> str:
    parts = [f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in fields.items()]
    parts.append(f"seed {cs.seed}+i per prompt")
    if kwargs:
        parts.append(f"chat_template_kwargs {json.dumps(kwargs, sort_keys=True)}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Measured:
    acceptance: counters.RealisedAcceptance
    version: str
    counter_names: str  # which counters the AL came from (provenance)


def _complete(eng: EngineSession, body: dict[str, Any]) -> None:
    req = urllib.request.Request(eng.base_url + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        r.read()


def measure(sc: SweepConfig, cs: CalibrationSettings, ps: PromptSet, run_root: Path,
            launch_id: str) -> Measured:
    """One clean launch; every prompt once, one at a time; AL from the counters' deltas over
    the whole run (samples through it for engines that only have an AL gauge)."""
    # Each prompt is its own history: nothing to gain from a prefix cache.
    hints = EngineHints(prefix_caching=False,
                        longest_request_tokens=cs.context_tokens + cs.max_tokens)
    adapter = make_adapter(sc, hints=hints)
    fields = sampling_fields(cs, sc)
    with EngineSession(adapter, run_root, launch_id, 1) as eng:
        with MetricsSampler(eng.scrape) as sampler:
            before = eng.scrape()
            for i, p in enumerate(ps.prompts):
                _complete(eng, {"model": adapter.served_model_name, "prompt": p,
                                "max_tokens": cs.max_tokens, "seed": cs.seed + i, **fields,
                                **adapter.request_extras()})
            after = eng.scrape()
        version = eng.version
    r = counters.realised_acceptance(adapter.counters, before, after, sampler.samples,
                                     k=sc.speculator.k)
    out = run_root / "server_metrics" / f"{launch_id}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"before": before, "after": after, "al": r.al,
                               "drafts": r.drafts, "accepted_tokens": r.accepted_tokens,
                               "draft_tokens": r.draft_tokens, "al_source": r.source}))
    decl = counters.resolve(adapter.counters, after)
    spec = decl.spec if decl is not None else None
    names = (f"Δ{spec.accepted.name} / Δ{spec.drafts.name}"
             if spec is not None and spec.accepted and spec.drafts else str(r.source))
    return Measured(r, version, names)


def make_row(sc: SweepConfig, cs: CalibrationSettings, ps: PromptSet, m: Measured,
             revision: str) -> AcceptanceRow:
    r, thinking = m.acceptance, sc.effective_thinking()
    if r.al is None:
        raise RuntimeError(f"k={sc.speculator.k}: no acceptance to measure ({r.reason})")
    counts = (f"drafts={r.drafts:.0f} draft_tokens={r.draft_tokens or 0:.0f} "
              f"accepted={r.accepted_tokens or 0:.0f}" if r.source == "counters"
              else f"{r.samples} gauge samples ({r.reason})")
    return AcceptanceRow(
        model=sc.model.name, speculator=sc.speculator.method, k=sc.speculator.k,
        thinking="on" if thinking else "off", al=round(r.al, 4),
        precision=sc.precision or sc.model.default_precision,
        draft=sc.speculator.draft_model or "", sample_method=sc.speculator.sample_method,
        dataset=ps.description,
        sampling=sampling_text(sampling_fields(cs, sc), cs, ps.template_kwargs),
        engine=f"{sc.engine.kind} {m.version}", source="harness calibrate",
        source_kind="calibration (real acceptance)",
        # a counter caveat (SGLang drops accepted tokens past max_tokens) travels with the row
        notes=(f"{counts}; AL = 1 + {m.counter_names}"
               + (f" ({r.reason})" if r.reason and r.source == "counters" else "")
               + f"; harness {revision}"),
        measured_on=time.strftime("%Y-%m-%d"))


def calibrate(sc_for: Any, cs: CalibrationSettings, run_root: Path, repo: Path,
              progress: Any = print, keep: Any = None) -> list[AcceptanceRow]:
    """`sc_for(k, thinking)` gives the SweepConfig of the engine at draft length k in that
    thinking mode (None: the model's default). `keep(row)` is called as each row is measured,
    so a calibration stopped at k=5 has kept k=1..4 (minutes each on a CPU)."""
    tokenizer = load_tokenizer(sc_for(cs.ks[0], cs.thinking[0]).model)
    rows = []
    revision = git_revision(repo)
    for thinking in cs.thinking:
        mode = "default" if thinking is None else ("on" if thinking else "off")
        ps = build_prompts(cs, tokenizer, thinking)
        progress(f"prompts (thinking {mode}): {ps.description}")
        for k in cs.ks:
            sc: SweepConfig = sc_for(k, thinking)
            m = measure(sc, cs, ps, run_root, f"calibrate-thinking-{mode}-k{k}")
            row = make_row(sc, cs, ps, m, revision)
            rows.append(row)
            if keep is not None:
                keep(row)
            r = m.acceptance
            progress(f"k={k} thinking {row.thinking}: AL {r.al:.4f} = 1 + "
                     f"{r.accepted_tokens or 0:.0f} accepted / {r.drafts or 0:.0f} drafts "
                     f"({r.source}: {m.counter_names})")
    return rows


def golden_yaml(rows: list[AcceptanceRow]) -> str:
    """The rows in the golden files' shape (recipes/acceptance/source/inferencex_golden_al/):
    a provenance header, then `<model>: {thinking_on|thinking_off: {k: AL}}`, ALs rounded to
    2 decimals as the golden files are."""
    import yaml

    curves: dict[str, dict[str, dict[int, float]]] = {}
    for r in sorted(rows, key=lambda r: (r.model, r.thinking, r.k)):
        mode = {"on": "thinking_on", "off": "thinking_off"}.get(r.thinking, "thinking_na")
        curves.setdefault(r.model, {}).setdefault(mode, {})[r.k] = round(r.al, 2)
    first = rows[0]
    header = [
        "Acceptance Length (AL) measured by `harness calibrate` (real drafter, real acceptance).",
        f"dataset: {first.dataset}",
        f"sampling: {first.sampling}",
        f"engine: {first.engine} | speculator: {first.speculator} | precision: "
        f"{first.precision}" + (f" | draft: {first.draft}" if first.draft else ""),
        f"measured on {first.measured_on}; {first.notes.split('; ', 1)[-1]}",
        "(counter deltas over all prompts of one clean launch per k; rounded to 2 decimals)",
        "",
        "key = num_speculative_tokens; value = AL",
    ]
    text = "".join(f"# {h}".rstrip() + "\n" for h in header)
    return text + yaml.safe_dump(curves, sort_keys=False)


def upsert(rows: list[AcceptanceRow], path: Path) -> None:
    """Write rows to a calibration file, replacing earlier calibrations of the same key on
    the same engine kind."""
    import csv

    keys = {(r.model, r.speculator, r.k, r.thinking, r.engine.split()[0]) for r in rows}
    kept: list[dict[str, str]] = []
    if path.is_file():
        with path.open(newline="") as f:
            for old in csv.DictReader(f):
                key = (old["model"], old["speculator"], int(old["k"]), old["thinking"],
                       old["engine"].split()[0] if old["engine"] else "")
                if key not in keys:
                    kept.append(old)
    path.parent.mkdir(parents=True, exist_ok=True)  # a measurement is not lost to a path
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows({c: old.get(c, "") for c in COLUMNS} for old in kept)
    append_rows(rows, path)


def add_arguments(p: Any, repo: Path, table_dir: Path) -> None:
    """`harness calibrate`'s flags (the command lives in harness.cli.main)."""
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--engine", default="llamacpp",
                   help="any engine with speculative counters: llamacpp, vllm, vllm-cpu, sglang")
    p.add_argument("--speculator", default="ngram")
    p.add_argument("--k", type=int, nargs="+", default=list(range(1, 9)))
    p.add_argument("--thinking", choices=("on", "off"), nargs="+", default=None,
                   help="thinking modes to measure, each its own curve (default: the model's)")
    p.add_argument("--dataset", help=f"prompts through Hugging Face datasets: a hub id "
                   f"({DatasetSpec.id} is what the golden curves ran; needs the network), a "
                   "save_to_disk directory or a JSON/JSONL/Parquet file; default: the shipped "
                   "SWE-agent trajectories (--text)")
    p.add_argument("--subset", default=DatasetSpec.subset, help="the hub dataset's config")
    p.add_argument("--split", default=DatasetSpec.split)
    p.add_argument("--category", default=DatasetSpec.category,
                   help="rows of this category only ('' for all)")
    p.add_argument("--prompts", type=int, default=None, help="at most this many (default all)")
    p.add_argument("--text", type=Path, nargs="+", default=sorted(
        (repo / "scenarios/agentic-text/swe-agent").glob("*.traj.json")))
    p.add_argument("--context-tokens", type=int, default=2048)
    p.add_argument("--max-tokens", type=int, default=None,
                   help=f"output tokens per prompt (default {GPU_MAX_TOKENS} as InferenceX; "
                        f"{CPU_MAX_TOKENS} with chip=cpu)")
    p.add_argument("--turns", type=int, default=12, help="assistant turns per trajectory")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--chat-template-kwargs", type=json.loads, default={},
                   help='JSON, e.g. \'{"reasoning_effort": "high"}\'')
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=table_dir / "calibrated.csv")
    p.add_argument("--golden-yaml", type=Path, help="also write the curves in the golden "
                   "files' shape (recipes/acceptance/source/inferencex_golden_al/)")
    p.add_argument("--work-dir", type=Path, default=Path("results/calibrate"))
    p.add_argument("--print-only", action="store_true", help="do not write --out")
    p.add_argument("overrides", nargs="*", help="more recipe overrides (key=value)")


def settings_from_args(a: Any, chip: str) -> CalibrationSettings:
    """CalibrationSettings from parsed flags; `chip` (the composed recipe's) picks the
    default output length."""
    dataset = None if not a.dataset else DatasetSpec(
        a.dataset, a.subset or None, a.split, a.category or None, a.prompts)
    thinking = [None] if not a.thinking else [t == "on" for t in dict.fromkeys(a.thinking)]
    max_tokens = a.max_tokens or (CPU_MAX_TOKENS if chip == "cpu" else GPU_MAX_TOKENS)
    return CalibrationSettings(
        texts=a.text, ks=a.k, context_tokens=a.context_tokens, max_tokens=max_tokens,
        turns_per_text=a.turns, temperature=a.temperature, seed=a.seed, top_p=a.top_p,
        top_k=a.top_k, dataset=dataset, thinking=thinking,
        chat_template_kwargs=a.chat_template_kwargs)
