"""One sweep job: a recipe served by one engine launch, every concurrency point on it.

Order matters: everything that can fail on bad input (config, engine rules, weights, tokenizer,
prompts, traces) runs before the engine starts; each point's results are on disk before the
next point begins; a server that dies mid-point fails that point, is restarted, and the sweep
goes on. The runner does not know which workload it runs (harness.workloads.base).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from harness import telemetry
from harness.client.streaming import STALL_ERROR, ClientSettings
from harness.config.errors import ConfigError
from harness.config.launches import launches
from harness.config.schema import SweepConfig
from harness.config.validate import gpus_of
from harness.engines import profiler
from harness.engines.profiler import PointProfiler
from harness.engines.registry import adapter_class, make_adapter
from harness.engines.sampler import MetricsSampler
from harness.engines.session import EngineSession
from harness.engines.weights import check_hub_access
from harness.engines.workspace import check_workspace
from harness.evals.context import with_eval_context
from harness.publish.dashboards.capacity import search_outcome
from harness.publish.report import print_summary
from harness.record import energy
from harness.record.identity import point_identity
from harness.record.metrics import GpuCount
from harness.record.point_record import PointIdentity, PointRecord
from harness.record.provenance import git_revision
from harness.record.results import RunDir, atomic_write
from harness.record.validity import settings_for
from harness.speculation import acceptance
from harness.speculation.acceptance import AcceptancePlan
from harness.sweep import correctness, interrupts, search, series
from harness.sweep.point import EngineState, JobContext, PowerMeasurement, assemble, now_iso
from harness.telemetry import host as host_telemetry
from harness.telemetry.base import TelemetrySampler
from harness.workloads.base import LoadLevel, Measurement, Target, stream_body
from harness.workloads.registry import check_kinds, make_workload, workload_class
from harness.workloads.tokenizer import load_tokenizer

log = logging.getLogger(__name__)
Locate = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class PlannedPoint:
    identity: PointIdentity
    level: LoadLevel


def run_seed(sc: SweepConfig) -> int:
    """The run's seed: given, or derived from the run id (runs never share prompts; a resumed
    run rebuilds the same ones)."""
    if sc.seed is not None:
        return int(sc.seed)
    return int.from_bytes(hashlib.sha256(sc.run_id.encode()).digest()[:4], "little")


def plan_points(sc: SweepConfig, plan: AcceptancePlan | None = None) -> list[PlannedPoint]:
    """Every point of the grid: one per concurrency (closed loop) or per request rate (open
    loop, docs/slo.md), per repeat."""
    out = []
    for rep in range(sc.repeats):
        for load in load_axis(sc):
            out.append(planned_point(sc, load, rep, plan))
    return out


def open_loop(sc: SweepConfig) -> bool:
    """Points offered at request rates: the workload kind's to say (Workload.open_loop)."""
    return workload_class(sc.scenario.kind).open_loop(sc)


def load_axis(sc: SweepConfig) -> list[float]:
    """The grid's load levels, laid out by the workload kind (Workload.load_axis)."""
    return workload_class(sc.scenario.kind).load_axis(sc)


def planned_point(sc: SweepConfig, load: float, repeat: int,
                  plan: AcceptancePlan | None = None) -> PlannedPoint:
    """One point at `load` on the sweep's axis (a rate when open loop, else a concurrency)."""
    seed = run_seed(sc)
    if open_loop(sc):
        cap = sc.scenario.max_inflight
        ident = point_identity(sc, cap, repeat, plan, rate=load)
        return PlannedPoint(ident, LoadLevel(ident.point_id(), cap, repeat, seed, rate=load))
    c = int(load)
    ident = point_identity(sc, c, repeat, plan)
    return PlannedPoint(ident, LoadLevel(ident.point_id(), c, repeat, seed))


def client_settings(sc: SweepConfig, keep_alive: bool) -> ClientSettings:
    return ClientSettings(
        base_url="", timeout_s=sc.client.timeout_s, stall_timeout_s=sc.client.stall_timeout_s,
        api_key_env=sc.engine.api_key_env, strict_sse=sc.client.strict_sse,
        max_stamp_err_ms=sc.client.max_stamp_err_ms, max_cpu_share=sc.client.max_cpu_share,
        max_event_bytes=sc.client.max_event_bytes, keep_alive=keep_alive,
        max_queue_delay_ms=sc.client.max_queue_delay_ms,
        max_stall_share=sc.client.max_stall_share, workers=sc.client.workers,
        transport=sc.client.transport, read_path=sc.client.read_path)


def prepare_job(sc: SweepConfig, run: RunDir, name: str, repo: Path, locate: Locate,
                todo: list[PlannedPoint], plan: AcceptancePlan) -> JobContext:
    """Everything before the engine starts: the workload built and its requests encoded, the
    adapter built whole from the recipe, the acceptance plan and the workload's hints."""
    check_kinds(sc, locate)  # cheap refusals first: the engine's and the workload's rules
    if adapter_class(sc.engine.kind).reads_workspace:  # a launch reading upstream's checkout
        check_workspace(sc, locate)
    check_hub_access(sc)  # offline or gated: one message, before anything is built
    problem = profiler.support_problem(sc)
    if problem:
        key, what, fix = problem
        raise ConfigError.at(locate, key, what, fix)
    correctness.check_data(sc, repo, locate)  # eval data present, SWE-bench refused
    choice = choose_telemetry(sc, locate)
    workload = make_workload(sc, load_tokenizer(sc.model), repo, locate)
    adapter = make_adapter(sc, plan, with_eval_context(workload.hints(), sc), locate)
    body = stream_body(adapter.served_model_name, dict(sc.scenario.sampling),
                       adapter.request_extras())
    workload.prepare([p.level for p in todo], body)
    t = sc.topology
    gpus = GpuCount(gpus_of(sc), t.prefill_gpus, t.decode_gpus)
    return JobContext(sc, sc.run_id, name, adapter, workload, run_seed(sc),
                      git_revision(repo), settings_for(sc), gpus, telemetry=choice, body=body)


def choose_telemetry(sc: SweepConfig, locate: Locate) -> telemetry.Choice:
    """The accelerator telemetry this job samples (docs/energy.md); a named source the host
    lacks, or a period or gap that is not positive, is refused before the engine starts."""
    t = sc.telemetry
    for key, value in (("period_s", t.period_s), ("max_gap_s", t.max_gap_s)):
        if not value > 0:
            raise ConfigError.at(locate, f"telemetry.{key}",
                                 f"must be positive, got {value}", f"set telemetry.{key}=1.0")
    try:
        choice = telemetry.choose(t.source)
    except ValueError as e:
        raise ConfigError.at(locate, "telemetry.source", str(e),
                             "set telemetry.source=auto (whatever this host has) or none") from None
    if choice.source == "none":
        log.info("no accelerator telemetry: %s", choice.reason)
    return choice


def run_job(sc: SweepConfig, run: RunDir, name: str, repo: Path,
            where: Locate | None = None) -> list[PointRecord]:
    """Run every pending point of one recipe, launch by launch (harness.config.launches).
    Every launch's acceptance plan is resolved before the first engine starts."""
    interrupts.restore()  # start-up is over: asyncio's clean Ctrl-C needs the default handler
    locate = where or (lambda key: f"the {key.split('.')[0]} recipe")
    plans = [(launch, acceptance.resolve(
        launch.sc, bool(sc.engine.can_inject_acceptance), locate("speculator.acceptance.mode"),
        synthetic_text=workload_class(launch.sc.scenario.kind).synthetic_text))
             for launch in launches(sc)]
    written: list[PointRecord] = []
    for launch, plan in plans:
        interrupts.check()
        job = f"{name}-{launch.tag}" if launch.tag else name
        written += run_launch(launch.sc, run, job, repo, locate, plan)
    print_summary([r.flat() for r in written])
    return written


def run_launch(sc: SweepConfig, run: RunDir, name: str, repo: Path, locate: Locate,
               plan: AcceptancePlan) -> list[PointRecord]:
    """One engine launch: its pending points, each on disk before the next begins."""
    if sc.search.mode == "slo":
        return run_search(sc, run, name, repo, locate, plan)
    planned = plan_points(sc, plan)
    done = set() if sc.fresh else run.completed_ids()
    todo = [p for p in planned if p.level.point_id not in done]
    if len(todo) < len(planned):
        print(f"resuming: {len(planned) - len(todo)} of {len(planned)} points already "
              f"complete ({name})")
    if not todo:
        return []
    ctx = prepare_job(sc, run, name, repo, locate, todo, plan)
    interrupts.check()  # a Ctrl-C swallowed while preparing stops us before the engine starts
    written: list[PointRecord] = []
    with EngineSession(ctx.adapter, run.root, name, max(sc.concurrency)) as eng:
        print(f"engine ready: {eng.version} at {eng.base_url}")
        for p in todo:
            interrupts.check()
            written.append(measure(ctx, eng, p, run))
        interrupts.check()
        # after the points, against the same server (InferenceX's RUN_EVAL order)
        correctness.run_stage(sc, run, name, repo, locate, eng, ctx.adapter,
                              {p.level.point_id for p in todo})
    return written


def measure(ctx: JobContext, eng: EngineSession, p: PlannedPoint, run: RunDir) -> PointRecord:
    """One point; an engine that died in it is restarted for the next."""
    record = run_point(ctx, eng, p, run)
    engine_down = any(r.name.startswith("engine_") for r in record.validity.failed)
    if engine_down and eng.launches_engine:
        print(f"engine failed during {p.level.point_id} "
              f"({record.reasons[0].splitlines()[0]}); restarting it")
        eng.restart()
    return record


def run_search(sc: SweepConfig, run: RunDir, name: str, repo: Path, locate: Locate,
               plan: AcceptancePlan) -> list[PointRecord]:
    """search.mode=slo (harness.sweep.search, docs/slo.md): loads chosen one at a time, each an
    ordinary point of the run; a point already complete in the run is read, not measured."""
    s, crit = sc.search, search.criteria(sc.search.criteria)
    state = search.SloSearch(float(s.lo), float(s.hi), float(s.resolution), s.confirm,
                             integer=not open_loop(sc))
    first = planned_point(sc, state.lo, 0, plan)
    ctx = prepare_job(sc, run, name, repo, locate, [first], plan)
    done = {} if sc.fresh else {p["point_id"]: p for p in run.points()
                                if p.get("status") == "ok"}
    written: list[PointRecord] = []
    slots = max(sc.concurrency) if open_loop(sc) else int(s.hi)
    with EngineSession(ctx.adapter, run.root, name, slots) as eng:
        print(f"engine ready: {eng.version} at {eng.base_url}")
        while (load := state.next_load()) is not None:
            interrupts.check()
            p = planned_point(sc, load, len(state.seen.get(load, [])), plan)
            flat = done.get(p.level.point_id)
            if flat is None:
                ctx.workload.prepare([p.level], dict(ctx.body or {}))
                record = measure(ctx, eng, p, run)
                written.append(record)
                flat = record.flat()
            verdict = search.judge(flat, crit)
            state.record(load, p.level.point_id, verdict)
            print(f"search: load {load:g} {'passes' if verdict.ok else 'fails'}"
                  + ("" if verdict.ok else f" ({verdict.breach})"))
    result = state.result(crit)
    run.write_json(f"search/{name}.json", {"axis": "rate" if open_loop(sc) else "concurrency",
                                           **result})
    print(f"search: {search_outcome(result)}, {result['num_points']} points")
    return written


def host_sampler(ctx: JobContext, eng: EngineSession) -> host_telemetry.HostSampler | None:
    """The host from /proc, when validity judges it: ours = this process's tree (client
    workers, the engine we launched), an engine on loopback we did not launch (the listener of
    its port), and a deployment's local steps."""
    if (ctx.validity.host == "off" and ctx.validity.steal == "off") \
            or host_telemetry.available():
        return None
    hs = host_telemetry.HostSampler(ctx.sc.telemetry.period_s)
    url = urllib.parse.urlsplit(eng.base_url)
    if url.hostname in ("127.0.0.1", "localhost", "::1") and url.port:
        for pid in host_telemetry.listening_pids(url.port):
            hs.add_root(pid)
    roots = getattr(eng, "process_roots", None)
    for pid in (roots() if roots else ()):
        hs.add_root(pid)
    return hs


def run_point(ctx: JobContext, eng: EngineSession, p: PlannedPoint, run: RunDir) -> PointRecord:
    """Measure one point; its requests, server samples, time series and power audit are on
    disk before its line. The samplers run beside the load; a failing one is a gap."""
    started = now_iso()
    prof, around = engine_hooks(ctx, eng, p.level.point_id, run)
    target = Target(eng.base_url, client_settings(ctx.sc, ctx.adapter.keep_alive), eng.scrape,
                    window_start=prof.start if prof else None,
                    window_stop=prof.stop if prof else None)
    total = ctx.workload.expected_requests(p.level)
    gpu = ctx.telemetry.sampler(ctx.sc.telemetry.period_s)
    hs = host_sampler(ctx, eng)
    desc = (f"rate {p.level.rate:g}/s" if p.level.rate is not None
            else f"conc {p.level.concurrency:>4}")
    roles_before = eng.role_metrics()  # a multi-node deployment's frontend and workers
    with (tqdm(total=total, desc=desc, unit="req") as bar,
          MetricsSampler(eng.scrape) as sampler, gpu or contextlib.nullcontext(),
          hs or contextlib.nullcontext()):
        wait_s = 2 * ctx.sc.telemetry.period_s + 1.0
        if gpu is not None:  # readings on both sides of the window, as upstream's monitor has
            gpu.wait_ready(wait_s)
        meas = ctx.workload.run(target, p.level, on_done=lambda _: bar.update(1))
        if gpu is not None:
            gpu.wait_past(meas.measured.end_ts, wait_s)
        if hs is not None:
            hs.wait_past(meas.measured.end_ts, wait_s)
    pid = p.level.point_id
    roles_after = eng.role_metrics()
    meas.extra.update({**around, **(prof.facts() if prof else {}), **eng.deployment_facts()})
    window = sampler.within(meas.measured.start_ts, meas.measured.end_ts)
    run.write_requests(pid, meas.records)
    run.write_json(f"server_metrics/{pid}.json",
                   {"before": meas.server_before, "after": meas.server_after,
                    "measured_window": [meas.measured.start_ts, meas.measured.end_ts],
                    "samples": [{"t": t, "metrics": m} for t, m in sampler.samples],
                    **({"roles": {"before": roles_before, "after": roles_after}}
                       if roles_before or roles_after else {})})
    figures = write_series(run, pid, ctx, meas, sampler.samples, gpu, hs)
    power = measure_power(ctx, gpu, meas)
    state = engine_state(eng, meas.measured.records, ctx.sc.client.stall_timeout_s)
    hf = host_telemetry.point_figures(
        hs, gpu.readings if gpu else [], meas.measured.start_ts, meas.measured.end_ts,
        [str(d) for d in ctx.sc.telemetry.devices])
    record = assemble(ctx, p.identity, meas, state, started, now_iso(), window, power, figures,
                      hf)
    if power.integration is not None:
        run.write_json(f"power/{pid}.json", energy.audit(
            power.integration, power.source,
            {k: v for k, v in record.metrics.items() if k.startswith("measured_")},
            ctx.sc.telemetry.max_gap_s))
    run.append_point(record.flat())
    return record


def engine_hooks(ctx: JobContext, eng: EngineSession, pid: str,
                 run: RunDir) -> tuple[PointProfiler | None, dict]:
    """The engine's prefix cache reset now (engine.reset_cache_before_point), and its profiler
    for the measured window (engine.profile); facts for the point."""
    e = ctx.sc.engine
    family = profiler.engine_family(ctx.sc) or ""
    facts: dict = {}
    if e.reset_cache_before_point:
        facts = profiler.reset_cache(eng.base_url, family, eng.headers())
    if not e.profile:
        return None, facts
    ep = profiler.endpoints_of(family)
    if ep is not None and ep.dir_in_body:
        trace_dir: Path | None = run.root / "profiles" / pid
    else:  # fixed at launch by the server's environment; unknown for an attached server
        trace_dir = eng.trace_dir if eng.launches_engine else None
    return PointProfiler(eng.base_url, family, trace_dir, eng.headers()), facts


def write_series(run: RunDir, pid: str, ctx: JobContext, meas: Measurement,
                 samples: list, gpu: TelemetrySampler | None,
                 hs: host_telemetry.HostSampler | None = None) -> dict[str, float]:
    """series/<point_id>.parquet (docs/series.md); its measured-window summary figures. A bug
    in building it loses the series, never the point (logged); a write failure is a write
    failure like any other."""
    t0 = meas.measured.start_ts
    try:
        lags = [*getattr(meas.warmup.health, "lag_samples", ()),
                *getattr(meas.measured.health, "lag_samples", ())]
        rows = (series.server_rows(ctx.adapter.counters, samples, t0)
                + series.client_rows(meas.records, t0, lags)
                + series.gpu_rows(gpu.readings if gpu else (), t0)
                + host_telemetry.series_rows(hs.readings if hs else (), t0))
        data = series.parquet_bytes(series.table(rows))
    except Exception:
        log.exception("time series of %s not built", pid)
        return {}
    atomic_write(run.root / "series" / f"{pid}.parquet", data)
    return series.summary(rows, meas.measured.duration_s)


def measure_power(ctx: JobContext, gpu: TelemetrySampler | None,
                  meas: Measurement) -> PowerMeasurement:
    """The telemetry integrated over the measured window, with InferenceX's rules."""
    if gpu is None:
        return PowerMeasurement(ctx.telemetry.source, ctx.telemetry.reason)
    note = (f"{gpu.errors} sampler error(s), last: {gpu.last_error}" if gpu.errors else "")
    chosen = {str(d) for d in ctx.sc.telemetry.devices}  # empty: every device, as upstream
    readings = [(r.device, r.t, r.power_w) for r in gpu.readings
                if not chosen or r.device in chosen]
    integration = energy.integrate(readings, meas.measured.start_ts, meas.measured.end_ts,
                                   ctx.gpus.total, ctx.sc.telemetry.max_gap_s)
    return PowerMeasurement(gpu.source, note, integration)


def engine_state(eng: EngineSession, records: list, stall_s: float) -> EngineState:
    if not eng.alive():
        return EngineState(eng.version, alive=False, failure=eng.failure_reason())
    if hung(records):
        return EngineState(eng.version, hung=True, failure=eng.hang_reason(stall_s))
    return EngineState(eng.version)


def hung(records: list) -> bool:
    """Most requests of the point stalled (the client's per-read timeout): the server is alive
    but no longer answering."""
    stalled = sum(1 for r in records if r.error.startswith(STALL_ERROR))
    return bool(records) and stalled * 2 >= len(records)
