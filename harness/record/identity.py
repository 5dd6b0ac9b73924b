"""A point's identity from a sweep config (`PointIdentity`, harness.record.point_record).

The id covers everything that changes what is measured (model, precision, chip, engine and its
settings, speculator, topology, scenario, concurrency, repeat) and nothing that does not (run
id, seed, time), so a rerun of an interrupted sweep recognises the points it already has.
"""

from __future__ import annotations

import dataclasses

from harness.config.schema import EngineConfig, ScenarioConfig, SweepConfig
from harness.config.validate import gpus_of
from harness.record.point_record import PointIdentity, digest
from harness.record.workload_traits import built_in_traits
from harness.speculation.acceptance import AcceptancePlan

_digest = digest


_ENGINE_LATER = ("cpu_affinity", "nice", "profile", "reset_cache_before_point", "port_offset",
                 "kv_offload", "helpers", "setup", "metrics_url", "deployment", "slurm",
                 "launch", "files")
_ENGINE_LATER_DEFAULTS = {k: v for k, v in dataclasses.asdict(EngineConfig(kind="x")).items()
                          if k in _ENGINE_LATER}


def engine_settings_hash(sc: SweepConfig) -> str:
    """Engine settings that change the server: its flags, environment, threads. Not the URL,
    the key's variable, timeouts, the declared version, nor the image or interpreter: a new
    image or build is exactly what a gate compares, so it must not make points incomparable."""
    e = dataclasses.asdict(sc.engine)
    # Fields added later (CPU pinning, the profiler hooks, the catalog's offload, helpers, setup,
    # attach deployment): left out at their defaults so points made before them keep their ids
    # and baselines stay comparable; set, they change what the server is.
    for k, v in _ENGINE_LATER_DEFAULTS.items():
        if e.get(k) == v:
            del e[k]
    for k in ("url", "api_key_env", "startup_timeout_s", "version", "image", "python", "host",
              "family", "workspace"):
        e.pop(k, None)
    return _digest(e)[:10]


# Scenario fields added after schema 2 (the agentic replay of docs/replay.md, the corpus by
# name): left out of the hash at their defaults on non-agentic scenarios, and the replaced
# `warmup_probes` kept at its old default, so fixed-sequence and timestamped points keep their
# ids and stay comparable with baselines made before them. Agentic points change id: their
# replay changed.
_SCENARIO_LATER = ("dataset", "warmup_requests_per_lane", "start_min_ratio", "start_max_ratio",
                   "join_rule", "pacing", "split_chains", "primer_start", "measured_window",
                   "cache_bust", "start_seed", "recycle", "subagent_start", "request_style",
                   "session_affinity")
# Left out at their defaults on every kind, so points made before them keep their ids: the
# open-loop settings (docs/slo.md; the rate list is the axis, each point's own rate is in its
# identity, never part of the settings hash) and the routing headers of an agentic replay.
_SCENARIO_AT_DEFAULT = ("arrival", "burstiness", "max_inflight", "num_requests",
                        "correlation_headers")
_SCENARIO_DEFAULTS = dataclasses.asdict(ScenarioConfig(name="", kind="fixed"))


def scenario_settings_hash(sc: SweepConfig) -> str:
    s = dataclasses.asdict(sc.scenario)
    s.pop("description", None)
    s.pop("request_rate", None)
    for k in _SCENARIO_AT_DEFAULT:
        if s.get(k) == _SCENARIO_DEFAULTS[k]:
            del s[k]
    if not built_in_traits(sc.scenario.kind).has_sessions:  # the hash the points had before
        for k in _SCENARIO_LATER:
            if s.get(k) == _SCENARIO_DEFAULTS[k]:
                del s[k]
        s["warmup_probes"] = 2
    return _digest(s)[:10]


def point_identity(sc: SweepConfig, concurrency: int, repeat: int,
                   acceptance: AcceptancePlan | None = None,
                   rate: float | None = None) -> PointIdentity:
    """`rate`: an open-loop point's offered rate (then `concurrency` is the in-flight cap)."""
    spec, topo, scen = sc.speculator, sc.topology, sc.scenario
    acc = acceptance or AcceptancePlan("none")
    return PointIdentity(**{
        "model": sc.model.name,
        "hf_id": sc.model.checkpoints.get(sc.precision or sc.model.default_precision,
                                          sc.model.hf_id),
        "precision": sc.precision or sc.model.default_precision,
        "chip": sc.chip.name,
        "engine": sc.engine.kind,
        "engine_image": sc.engine.image,
        "engine_settings": engine_settings_hash(sc),
        "spec_method": spec.method,
        "spec_k": spec.k if spec.method != "none" else 0,
        "spec_acceptance_mode": acc.mode,
        "spec_acceptance_length": acc.length,
        "thinking": sc.effective_thinking(),
        "tp": topo.tp,
        "ep": topo.ep,
        "dp_attention": topo.dp_attention,
        "pp": topo.pp,
        "pcp": topo.pcp,
        "gpus": gpus_of(sc),
        "disagg": topo.prefill_gpus > 0 and topo.decode_gpus > 0,
        "scenario": scen.name,
        "scenario_kind": scen.kind,
        "scenario_settings": scenario_settings_hash(sc),
        "isl": scen.isl,
        "osl": scen.osl,
        "conc": concurrency,
        "repeat": repeat,
        "rate": None if rate is None else float(rate),
        "arrival": scen.arrival if rate is not None else "closed",
    })
