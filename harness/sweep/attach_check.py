"""One catalog key, one point, attached: the key's recipe chosen as `harness sweep recipe=KEY`
composes it, one of its launches (topology, dp, router, concurrency) run against a server that
is already up, the realised acceptance judged by the harness's own validity rules.

This is how `harness catalog verify-e2e` (harness/testing/catalog_e2e.py) walks every shipped
key through the attach path in one process, seconds per key; the server can be anything that
speaks the key's engine's API and metrics (an engine emulator in the tests).

The point is the key's own, shortened only where the length does not change what is checked:
- the launch: the key's smallest concurrency, or, when a row of the key puts a router in front
  of the engine, the smallest concurrency of such a row (the router is part of what runs);
- speculation: the key's method and k, `speculator.acceptance.mode=injected` (a fixed key's
  default is real acceptance) at the AL the sweep would inject (the acceptance table), verified
  by the `acceptance_realised` rule;
- fixed: the key's ISL/OSL, `requests_per_conc` and `warmup_per_conc` cut to `short.requests`;
- agentic: the scaled-down local traces of `scenarios=agentic-weka-cpu` (the key's corpus is a
  Hub download) for `short.agentic_s` seconds;
- the model's tokenizer: `short.tokenizer` when given (the key's checkpoints are not on this
  machine), and no telemetry, evals or lossless check (no accelerator behind the server).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.launches import Launch, launches
from harness.config.locations import repo_root
from harness.config.schema import EngineConfig, SweepConfig
from harness.config.validate import Locator, check_combinations, check_ranges
from harness.record.results import RunDir
from harness.speculation import acceptance
from harness.workloads.registry import check_kinds, workload_class

AGENTIC_SHORT = "agentic-weka-cpu"  # scenarios/agentic-weka-cpu.yaml: traces in the repo
AGENTIC_S = 10.0


@dataclass(frozen=True, slots=True)
class Short:
    """How short a verification point is (see the module docstring)."""
    requests: int = 1  # fixed: measured and warmup requests per concurrency
    agentic_s: float = AGENTIC_S  # agentic: measured replay seconds
    agentic_fit: int = 4  # agentic: trace token counts / this (longer outputs: more drafts)
    tokenizer: str | None = None  # a tokenizer directory (or HF id) for every key's model
    max_stamp_err_ms: float = 20.0  # a shared, loaded host: the client's own health bounds
    max_queue_delay_ms: float = 100.0


@dataclass(frozen=True, slots=True)
class KeyPoint:
    """What one key runs at, decided before anything runs."""
    key: str
    engine: str  # the engine family behind the URL (vllm, sglang, trtllm, atom)
    kind: str  # fixed | agentic
    dp: int
    router: str | None  # the router helper's name when the launch has one in front
    concurrency: int
    k: int  # draft length (0: no speculation)
    al: float | None  # the AL the sweep injects; None: no speculation, or none to inject
    launch: str  # the launch's tag
    sc: SweepConfig | None = None  # the key's launch, before it is made an attach point;
    # None: the key could not be planned (`unverified` says why) and does not run
    # why the injected AL cannot be verified: the point then runs at the key's own default
    # acceptance mode (real, for a fixed key), so the attach path still runs, but the key fails
    unverified: str = ""


@dataclass(slots=True)
class KeyResult:
    point: KeyPoint
    realised_al: float | None = None
    valid: bool = False
    seconds: float = 0.0
    why_not: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.valid and not self.why_not


def _router_name(launch: Launch) -> str | None:
    return next((h.name for h in launch.sc.engine.helpers if h.role == "router"), None)


def choose_launch(sc: SweepConfig) -> Launch:
    """The key's smallest concurrency; among router rows first when the key has them."""
    every = launches(sc)
    routed = [lc for lc in every if _router_name(lc) is not None]
    return min(routed or every, key=lambda lc: min(lc.sc.concurrency))


def plan_key(key: str) -> KeyPoint:
    """Compose `recipe=KEY` as the sweep does and choose its point; a key whose AL cannot be
    looked up (no table row for its model, method and k) comes back unverified, planned at its
    own default acceptance mode."""
    lc = choose_launch(compose_sweep([f"recipe={key}", "speculator.acceptance.mode=injected"]))
    one, t = lc.sc, lc.sc.topology
    dp = t.tp if t.dp_attention else 1
    k = one.speculator.k if one.speculator.method != "none" else 0
    base = dict(key=key, engine=one.engine.kind, kind=one.scenario.kind, dp=dp,
                router=_router_name(lc), concurrency=min(one.concurrency), k=k, launch=lc.tag)
    try:
        plan = acceptance.resolve(one, True, f"recipes/recipe/{key}.yaml",
                                  synthetic_text=workload_class(one.scenario.kind).synthetic_text)
    except ConfigError as e:
        why = f"not verified, no AL to inject: {e.problem.splitlines()[0]}"
        own = choose_launch(compose_sweep([f"recipe={key}"]))
        return KeyPoint(**base, al=None, sc=own.sc, unverified=why)
    return KeyPoint(**base, al=plan.length if plan.mode == "injected" else None, sc=one)


def unplanned(key: str, e: Exception) -> KeyPoint:
    """A key whose recipe did not compose: a row of the table, not the end of the walk."""
    why = f"not planned: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}"
    return KeyPoint(key=key, engine="-", kind="-", dp=0, router=None, concurrency=0, k=0,
                    al=None, launch="", unverified=why)


def attach_config(p: KeyPoint, url: str, metrics_url: str | None, short: Short,
                  results_dir: Path, run_id: str) -> SweepConfig:
    """The key's launch as an attach point on `url` (the engine's own /metrics at
    `metrics_url` when a router fronts it), shortened (module docstring); checked as the
    sweep checks a composed config."""
    assert p.sc is not None
    sc = p.sc
    engine = EngineConfig(kind="endpoint", url=url, metrics_url=metrics_url, family=p.engine,
                          can_inject_acceptance=True, startup_timeout_s=30.0)
    # SGLang's AL is a gauge read once a second, one distinct reading per 40-step decode
    # interval (harness/engines/acceptance_counters.py): twice the window for its draws
    slow = 2 if p.engine == "sglang" and p.k else 1
    if workload_class(p.kind).has_sessions:  # a short replay of session trees
        secs = short.agentic_s * slow
        scenario = replace(compose_sweep([f"scenarios={AGENTIC_SHORT}"]).scenario,
                           duration_s=secs, min_measured_s=secs / 4,
                           warmup_requests_per_lane=1, max_failed_share=0.5,
                           fit_factor=short.agentic_fit)
    else:
        scenario = replace(sc.scenario, requests_per_conc=short.requests * slow,
                           warmup_per_conc=short.requests)
    # the short run's tokenizer encodes chats with its own template, not the model's encoder
    model = (replace(sc.model, tokenizer=short.tokenizer, chat_encoder="template")
             if short.tokenizer else sc.model)
    client = replace(sc.client, max_stamp_err_ms=short.max_stamp_err_ms,
                     max_queue_delay_ms=short.max_queue_delay_ms, max_stall_share=1.0)
    # a launch check, not a measurement: a busy host marks the point rather than failing it,
    # as the client's bounds above are relaxed
    out = replace(sc, engine=engine, scenario=scenario, model=model, client=client,
                  telemetry=replace(sc.telemetry, source="none"),
                  validity=replace(sc.validity, host="warn"),
                  eval=replace(sc.eval, tasks=[]),
                  lossless=replace(sc.lossless, mode="off"), concurrency=[p.concurrency],
                  search_space=[], relaunch_per_concurrency=False, run_id=run_id,
                  results_dir=str(results_dir), fresh=True, repeats=1)
    where = Locator({}, [f"recipe={p.key}"])
    check_ranges(out, where)
    check_combinations(out, where)
    check_kinds(out, where)
    return out


def judge(p: KeyPoint, flat: dict[str, Any]) -> tuple[bool, str]:
    """The point's verdict, and for an injected key the acceptance rule must have run and
    passed (a point can be valid with the rule skipped)."""
    reasons = [str(r).splitlines()[0] for r in flat.get("invalid_reasons") or []]
    if not flat.get("valid"):
        return False, "; ".join(reasons) or f"status {flat.get('status')}"
    if p.al is not None:
        rule = next((r for r in flat.get("validity") or []
                     if r.get("name") == "acceptance_realised"), None)
        if rule is None or not rule.get("ok"):
            return False, f"acceptance_realised not passed: {rule}"
    return True, ""


def run_key(p: KeyPoint, url: str, metrics_url: str | None, short: Short,
            results_dir: Path) -> KeyResult:
    """Run the key's point in this process through the sweep's own job runner."""
    from harness.sweep.runner import run_job

    t0 = time.perf_counter()
    res = KeyResult(p)
    try:
        run_id = p.key
        sc = attach_config(p, url, metrics_url, short, results_dir, run_id)
        run = RunDir.open(sc.results_dir, run_id)
        run.lock()
        records = run_job(sc, run, f"e2e-{p.launch}", repo_root())
        if len(records) != 1:
            raise _Refused(f"{len(records)} points written, expected 1")
        flat = records[0].flat()
        res.realised_al = flat.get("spec_realised_al")
        res.valid, res.why_not = judge(p, flat)
        res.why_not = "; ".join(w for w in (p.unverified, res.why_not) if w)
        res.extra = {"draws": flat.get("spec_independent_draws"),
                     "al_source": flat.get("spec_al_source")}
    except _Refused as e:
        res.why_not = str(e)
    except Exception as e:  # one key's failure is a row of the table, not the end of the walk
        res.why_not = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    res.seconds = time.perf_counter() - t0
    return res


class _Refused(Exception):
    pass


def table(results: list[KeyResult]) -> str:
    """key, engine, kind, dp, router, concurrency, injected AL, realised AL, the point's
    validity, the key's verdict (pass), seconds, why not: one line per key, fixed-width."""
    head = ("key", "engine", "kind", "dp", "router", "conc", "inj AL", "real AL", "valid",
            "pass", "s", "why not")
    rows = [head]
    for r in results:
        p = r.point
        rows.append((p.key, p.engine, p.kind, str(p.dp), p.router or "-", str(p.concurrency),
                     f"{p.al:.2f}" if p.al is not None else "-",
                     f"{r.realised_al:.3f}" if r.realised_al is not None else "-",
                     "yes" if r.valid else "no", "yes" if r.ok else "NO", f"{r.seconds:.1f}",
                     r.why_not[:200]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True))
                     + "  " + row[-1] for row in rows)
