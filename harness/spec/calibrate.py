"""`harness calibrate`: acceptance lengths measured on real agentic-coding text.

For each trajectory (SWE-agent `.traj` files) and each assistant turn, the real message history
up to that turn goes through the model's chat template (oldest turns dropped to fit a token
budget) and the engine generates a continuation with real acceptance. One engine launch per
draft length k; AL = 1 + accepted / drafts from the engine's own counters over every prompt.
Rows are written in the acceptance table's format, with their provenance.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.schema import SweepConfig
from harness.engines.registry import make_adapter
from harness.engines.session import EngineSession
from harness.point import engine_facts
from harness.results import git_revision
from harness.spec.acceptance import COLUMNS, AcceptanceRow, append_rows
from harness.workloads.base import EngineHints
from harness.workloads.tokenizer import load_tokenizer


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


def turn_prompts(messages: list[dict[str, str]], tokenizer: Any, budget: int,
                 max_turns: int) -> list[str]:
    """One templated prompt per assistant turn: the history before it, fitted to `budget`."""
    prompts = []
    for j, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        history = messages[:j]
        system = [h for h in history[:1] if h["role"] == "system"]
        rest = history[len(system):]
        while rest:
            text = tokenizer.apply_chat_template(system + rest, tokenize=False,
                                                 add_generation_prompt=True)
            if len(tokenizer.encode(text, add_special_tokens=False)) <= budget:
                prompts.append(text)
                break
            rest = rest[1:]  # drop the oldest turn
        if len(prompts) >= max_turns:
            break
    return prompts


@dataclass
class CalibrationSettings:
    texts: list[Path]
    ks: list[int]
    context_tokens: int = 2048
    max_tokens: int = 64
    turns_per_text: int = 12
    temperature: float = 0.0
    seed: int = 0


def calibrate(sc_for_k: Any, cs: CalibrationSettings, run_root: Path, repo: Path,
              progress: Any = print) -> list[AcceptanceRow]:
    """`sc_for_k(k)` gives the SweepConfig of the engine at draft length k."""
    import urllib.request

    base = sc_for_k(cs.ks[0])
    tokenizer = load_tokenizer(base.model)
    prompts = [p for t in cs.texts
               for p in turn_prompts(load_messages(t), tokenizer, cs.context_tokens,
                                     cs.turns_per_text)]
    if not prompts:
        raise ValueError("no prompt fits the context budget; raise --context-tokens")
    progress(f"{len(prompts)} prompts from {len(cs.texts)} trajectories")
    rows = []
    revision = git_revision(repo)
    for k in cs.ks:
        sc: SweepConfig = sc_for_k(k)
        # Each prompt is its own history: nothing to gain from a prefix cache.
        hints = EngineHints(prefix_caching=False,
                            longest_request_tokens=cs.context_tokens + cs.max_tokens)
        adapter = make_adapter(sc, hints=hints)
        with EngineSession(adapter, run_root, f"calibrate-k{k}", 1) as eng:
            before = eng.scrape()
            for p in prompts:
                body = {"model": adapter.served_model_name, "prompt": p,
                        "max_tokens": cs.max_tokens, "temperature": cs.temperature,
                        "seed": cs.seed, **adapter.request_extras()}
                req = urllib.request.Request(eng.base_url + "/v1/completions",
                                             json.dumps(body).encode(),
                                             {"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=600) as r:
                    r.read()
            spec = engine_facts(adapter, before, eng.scrape())
            version = eng.version
        al = spec.get("spec_realised_al")
        if al is None:
            raise RuntimeError(f"k={k}: the engine drafted nothing; no acceptance to measure")
        thinking = sc.effective_thinking()
        rows.append(AcceptanceRow(
            model=sc.model.name, speculator=sc.speculator.method, k=k,
            thinking="on" if thinking else "off", al=round(al, 4),
            precision=sc.precision or sc.model.default_precision, draft="",
            dataset=(f"SWE-agent trajectories {', '.join(t.stem for t in cs.texts)}: "
                     f"{len(prompts)} assistant turns, history <= {cs.context_tokens} tokens, "
                     f"{cs.max_tokens}-token continuations"),
            sampling=f"temperature {cs.temperature:g}, seed {cs.seed}",
            engine=f"{sc.engine.kind} {version}",
            source="harness calibrate", source_kind="calibration (real acceptance)",
            notes=(f"drafts={spec['spec_drafts']:.0f} draft_tokens="
                   f"{spec['spec_draft_tokens']:.0f} accepted={spec['spec_accepted_tokens']:.0f}; "
                   f"harness {revision}"),
            measured_on=time.strftime("%Y-%m-%d"),
        ))
        progress(f"k={k}: AL {al:.3f} ({spec['spec_drafts']:.0f} drafts)")
    return rows


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
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows({c: old.get(c, "") for c in COLUMNS} for old in kept)
    append_rows(rows, path)
