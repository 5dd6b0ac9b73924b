"""The correctness stage of a job, after its points (InferenceX runs its evals after the
benchmark, against the same server: benchmarks/benchmark_lib.sh @843c6254, EVALS.md):

1. accuracy evals (`eval=`), through lm-eval, on the job's server; a job that ran at an
   injected acceptance length is evaluated on a fresh launch with real verification, as
   upstream never injects acceptance when evals run;
2. the lossless check of a speculative job: the same prompts on that server and on one launch
   of the same engine without the speculator.

Results go to `correctness/<job>.json` and onto each point of the job (fields and validity
rules, harness.evals.verdicts); the points file is rewritten with them.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.config.schema import SpeculatorConfig, SweepConfig
from harness.config.schema_stages import LosslessConfig
from harness.engines import counters
from harness.engines.base import EngineAdapter
from harness.engines.registry import make_adapter
from harness.engines.session import EngineSession
from harness.evals import lossless as ll
from harness.evals.accuracy import EvalResult, run_task
from harness.evals.context import with_eval_context
from harness.evals.tasks import data_for
from harness.evals.verdicts import eval_fields, eval_rule, lossless_fields, lossless_rule
from harness.record.results import RunDir
from harness.record.validity import Validity
from harness.speculation.acceptance import AcceptancePlan

log = logging.getLogger(__name__)
Locate = Callable[[str], str]


def check_data(sc: SweepConfig, repo: Path, locate: Locate) -> None:
    """Before any engine starts: every eval task's data is there (or SWE-bench refused)."""
    for task in sc.eval.tasks:
        data_for(task, sc.eval.data_dir, locate("eval.data_dir"), repo)
    if lossless_wanted(sc, launches=True):
        path = repo / "data" / "evals" / "gsm8k" / "test.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the lossless check's prompts are missing")


def lossless_wanted(sc: SweepConfig, launches: bool, injected: bool = False) -> bool:
    """auto: every speculative job at real acceptance whose engine the harness launches (an
    attached server has no speculator-free twin to compare with; a job at an injected AL
    would need a launch of its own with real verification: `on` asks for that too)."""
    if sc.speculator.method == "none" or sc.lossless.mode == "off":
        return False
    return sc.lossless.mode == "on" or (launches and not injected)


def run_evals(sc: SweepConfig, eng: EngineSession, model: str, repo: Path,
              locate: Locate) -> list[EvalResult]:
    conc = sc.eval.concurrency or max(sc.concurrency)
    out = []
    for task in sc.eval.tasks:
        print(f"eval {task} on {eng.base_url} (concurrency {conc}, limit "
              f"{sc.eval.limit or 'none'})", flush=True)
        r = run_task(task, eng.base_url, model, sc.eval, conc, sc.model.context_length,
                     dict(sc.model.eval_floors), repo, where=locate("eval.data_dir"))
        print(f"eval {task}: {r.score:.3f} (stderr {r.stderr or 0:.3f}, n {r.n}, floor "
              f"{r.floor:g}, {'pass' if r.passed else 'FAIL'}) in {r.duration_s:.0f} s",
              flush=True)
        out.append(r)
    return out


def check_lossless(sc: SweepConfig, spec_eng: EngineSession, base_eng: EngineSession,
                   model: str, repo: Path) -> ll.LosslessResult:
    """The check between two running servers: `spec_eng` with the speculator, `base_eng`
    the same build without it."""
    c = sc.lossless
    prompts = ll.slice_prompts(repo, c.prompts)
    conc = min(4, max(sc.concurrency))
    res = ll.LosslessResult(settings={
        "prompts": len(prompts), "prompt_source": "data/evals/gsm8k/test.jsonl (chat)",
        "max_tokens": c.max_tokens, "temperatures": list(c.temperatures),
        "samples": c.samples, "positions": c.positions, "alpha": c.alpha,
        "concurrency": conc, "serial_retry": c.serial_retry, "tie_margin": c.tie_margin,
        "top_logprobs": c.top_logprobs,
        "speculator": sc.speculator.method, "k": sc.speculator.k})
    before = spec_eng.scrape()
    for t in c.temperatures:
        if t == 0:
            greedy, res.control = _greedy_pass(base_eng, spec_eng, model, prompts, c, conc)
            res.greedy.append(greedy)
            # Batched and not a clean identity (a control that did not repeat itself, or
            # divergences, near-ties included): the same one request at a time, where no
            # batch can move the numerics.
            if conc > 1 and c.serial_retry and (not res.control.ok or greedy.divergences):
                res.serial, res.serial_control = _greedy_pass(base_eng, spec_eng, model,
                                                              prompts, c, 1)
            continue
        ref_seeds = list(range(1, c.samples + 1))
        spec_seeds = [100_000 + s for s in ref_seeds]  # independent draws on each side
        ref = ll.collect(base_eng.base_url, model, prompts, c.max_tokens, t, ref_seeds, conc,
                         extras=base_eng.adapter.request_extras())
        spec = ll.collect(spec_eng.base_url, model, prompts, c.max_tokens, t, spec_seeds, conc,
                          extras=spec_eng.adapter.request_extras())
        res.sampled.append(ll.compare_sampled(ref, spec, t, c.positions, c.alpha))
    after = spec_eng.scrape()
    try:  # whether speculation engaged at all (a verdict over no accepted drafts is vacuous)
        r = counters.realised_acceptance(spec_eng.adapter.counters, before, after, (),
                                         k=sc.speculator.k)
        res.spec_drafts, res.spec_accepted = r.drafts, r.accepted_tokens
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        log.info("speculative counters not read: %s", e)
    return res


def _greedy_pass(base: EngineSession, spec: EngineSession, model: str, prompts: list[str],
                 c: LosslessConfig, conc: int) -> tuple[ll.GreedyVerdict, ll.GreedyVerdict]:
    """The T=0 comparison (reference margins scored) and its control, `conc` in flight. Every
    request asks for the same top logprobs, with the engine's own request fields (llama.cpp's
    `cache_prompt: false` for fixed-sequence recipes: a prompt served from its cache is
    computed otherwise than one prefilled, and its argmax can flip at a near-tie)."""
    def greedy(eng: EngineSession) -> tuple[list[list[str]], list[ll.Tops]]:
        return ll.collect_scored(eng.base_url, model, prompts, c.max_tokens, 1, conc,
                                 c.top_logprobs, extras=eng.adapter.request_extras())

    ref, tops = greedy(base)
    out, _ = greedy(spec)
    again, _ = greedy(base)
    return (ll.compare_greedy(ref, out, 0.0, tops, c.tie_margin),
            ll.compare_greedy(ref, again))  # the control: exact identity, no tie margin


def without_speculator(sc: SweepConfig) -> SweepConfig:
    return dataclasses.replace(sc, speculator=SpeculatorConfig())


def run_stage(sc: SweepConfig, run: RunDir, job: str, repo: Path, locate: Locate,
              eng: EngineSession, adapter: EngineAdapter, point_ids: set[str]) -> None:
    """Evals and the lossless check for one job whose points are on disk."""
    real = adapter.acceptance.mode != "injected"
    want_ll = lossless_wanted(sc, eng.launches_engine, injected=not real)
    if not sc.eval.tasks and not want_ll:
        return
    t0 = time.monotonic()
    hints = with_eval_context(adapter.hints, sc)
    # Injected acceptance changes what the engine outputs: evals and the comparison run on a
    # launch with real verification (same build, same flags otherwise).
    check_eng = eng if real else EngineSession(
        make_adapter(sc, AcceptancePlan("real"), hints, locate), run.root, f"{job}-real",
        max(sc.concurrency))
    results: list[EvalResult] = []
    lossless = ll.LosslessResult()
    try:
        if not real:
            check_eng.start()
        model = adapter.served_model_name
        results = run_evals(sc, check_eng, model, repo, locate)
        if want_ll and not eng.launches_engine:
            lossless.note = "attached engine: no launch without the speculator to compare with"
        elif want_ll:
            base = EngineSession(make_adapter(without_speculator(sc), None, hints, locate),
                                 run.root, f"{job}-nospec", max(sc.concurrency))
            with base:
                lossless = check_lossless(sc, check_eng, base, model, repo)
            print(f"lossless check: {lossless.verdict()}", flush=True)
    finally:
        if not real:
            check_eng.stop()
    record(run, job, point_ids, results, lossless, time.monotonic() - t0)


def record(run: RunDir, job: str, point_ids: set[str], results: list[EvalResult],
           lossless: ll.LosslessResult, duration_s: float) -> None:
    """On disk: correctness/<job>.json, then each point of the job amended."""
    run.write_json(f"correctness/{job}.json", {
        "job": job, "duration_s": round(duration_s, 3),
        "evals": [r.to_json() for r in results],
        "lossless": lossless.to_json() if lossless.ran or lossless.note else None})
    rules = [eval_rule(r) for r in results] + lossless_rule(lossless)
    fields: dict[str, Any] = {**(eval_fields(results) if results else {}),
                              **(lossless_fields(lossless)
                                 if lossless.ran or lossless.note else {})}

    def amend(line: dict[str, Any]) -> dict[str, Any]:
        validity = Validity.from_json(line.get("validity") or [])
        kept = tuple(r for r in validity.rules
                     if not (r.name.startswith("eval_") or r.name == "lossless"))
        verdict = Validity(kept + tuple(rules))
        return {**line, **fields, "valid": line.get("status") == "ok" and verdict.valid,
                "invalid_reasons": verdict.reasons, "validity": verdict.to_json()}

    run.amend_points(point_ids, amend)


def _session(sc: SweepConfig, run_root: Path, name: str, locate: Locate,
             plan: AcceptancePlan | None = None) -> EngineSession:
    from harness.engines.base import fixed_hints

    adapter = make_adapter(sc, plan, with_eval_context(fixed_hints(sc), sc), locate)
    return EngineSession(adapter, run_root, name, max(sc.concurrency))


def standalone_evals(sc: SweepConfig, repo: Path, work: Path,
                     locate: Locate) -> list[EvalResult]:
    """`harness eval`: the recipe's engine launched (or attached, engine=endpoint) with real
    verification, the eval tasks run on it, the engine stopped."""
    check_data(sc, repo, locate)
    real = AcceptancePlan("real") if sc.speculator.method != "none" else None
    with _session(sc, work, "eval", locate, real) as eng:
        print(f"engine ready: {eng.version} at {eng.base_url}", flush=True)
        return run_evals(sc, eng, eng.adapter.served_model_name, repo, locate)


def standalone_lossless(sc: SweepConfig, repo: Path, work: Path, locate: Locate,
                        base_url: str | None = None) -> ll.LosslessResult:
    """`harness check lossless`: the recipe's engine with its speculator (real verification)
    against the same engine without it; or, with engine=endpoint, the attached server
    against `base_url` (a server of the same build without the speculator)."""
    if sc.speculator.method == "none":
        raise ValueError("the lossless check compares a speculator with none: choose one "
                         "(speculator=ngram, speculator=self_draft, ...)")
    with _session(sc, work, "spec", locate, AcceptancePlan("real")) as spec:
        if base_url:
            base_sc = dataclasses.replace(
                sc, engine=dataclasses.replace(sc.engine, url=base_url))
            base = _session(without_speculator(base_sc), work, "nospec", locate)
        else:
            base = _session(without_speculator(sc), work, "nospec", locate)
        with base:
            return check_lossless(sc, spec, base, spec.adapter.served_model_name, repo)
