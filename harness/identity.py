"""What a point is: its identity fields and a stable id hashed from them.

The id covers everything that changes what is measured (model, precision, chip, engine and its
settings, speculator, topology, scenario, concurrency, repeat) and nothing that does not (run
id, seed, time), so a rerun of an interrupted sweep recognises the points it already has.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import orjson

from harness.config.schema import SweepConfig
from harness.config.validate import gpus_of
from harness.spec.acceptance import AcceptancePlan


def _digest(obj: Any) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()


def engine_settings_hash(sc: SweepConfig) -> str:
    """Engine settings that change the server (not the URL or the name of a key variable)."""
    e = dataclasses.asdict(sc.engine)
    for k in ("url", "api_key_env", "startup_timeout_s", "version"):
        e.pop(k, None)
    return _digest(e)[:10]


def scenario_settings_hash(sc: SweepConfig) -> str:
    s = dataclasses.asdict(sc.scenario)
    s.pop("description", None)
    return _digest(s)[:10]


def point_identity(sc: SweepConfig, concurrency: int, repeat: int,
                   acceptance: AcceptancePlan | None = None) -> dict[str, Any]:
    spec, topo, scen = sc.speculator, sc.topology, sc.scenario
    acc = acceptance or AcceptancePlan("none")
    return {
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
        "gpus": gpus_of(sc),
        "scenario": scen.name,
        "scenario_kind": scen.kind,
        "scenario_settings": scenario_settings_hash(sc),
        "isl": scen.isl,
        "osl": scen.osl,
        "conc": concurrency,
        "repeat": repeat,
    }


def point_id(identity: dict[str, Any]) -> str:
    readable = f"c{identity['conc']}-r{identity['repeat']}"
    return f"{readable}-{_digest(identity)[:12]}"
