"""A point carries its workload kind's traits, and every reader takes them from the point: a
plug-in kind's recorded traits are drawn, gated and exported as it declares, and a point
written before the traits were recorded reads as its built-in kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.client.health import ClientHealth
from harness.client.streaming import PhaseResult
from harness.config.compose import compose_sweep
from harness.publish.curves import series_key
from harness.publish.dashboards.page import hover_lines
from harness.publish.gate import point_label
from harness.publish.speedup import base_key
from harness.publish.tables import scenario_label
from harness.record.point_record import PointRecord
from harness.record.workload_traits import (
    TRAIT_FIELDS,
    WorkloadTraits,
    built_in_traits,
    traits_of,
)
from harness.workloads.base import Measurement
from harness.workloads.registry import WORKLOAD_KINDS, workload_class

ROOT = Path(__file__).resolve().parents[2]


def _flat(kind: str, **kw) -> dict:
    p = {"schema_version": 2, "point_id": "p", "run_id": "r", "model": "m", "precision": "q4",
         "chip": "cpu", "engine": "llamacpp", "scenario": "s", "scenario_kind": kind,
         "conc": 4, "isl": 128, "osl": 64, "spec_method": "mtp", "spec_k": 2, "valid": True,
         "status": "ok", "fit": "none"}
    p.update(kw)
    return p


@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
def test_the_classes_and_the_fallback_table_agree(kind: str) -> None:
    assert workload_class(kind).traits() == built_in_traits(kind)


def test_a_measured_point_records_its_traits() -> None:
    """What the sweep's assembly stores from the workload (harness.sweep.point.assemble)."""
    from harness.workloads.fixed_seq import FixedSequenceWorkload

    wl = FixedSequenceWorkload.__new__(FixedSequenceWorkload)
    wl.sc = compose_sweep(["run_id=u", "scenarios=fixed-128x64"])
    empty = PhaseResult([], 0, 1, 0, ClientHealth())
    facts = wl.facts(Measurement(empty, empty, {}, {}), {})
    assert {k: facts[k] for k in TRAIT_FIELDS} == WorkloadTraits(fixed_shape=True).fields()


def test_a_line_without_traits_reads_as_its_built_in_kind() -> None:
    old = PointRecord.from_flat(_flat("agentic"))
    assert old.traits == built_in_traits("agentic")
    assert old.series_key() == ("m", "cpu", "llamacpp", "q4")  # one merged agentic curve
    fixed = PointRecord.from_flat(_flat("fixed"))
    assert fixed.series_key() == ("m", "cpu", "llamacpp", "q4", "mtp")
    assert scenario_label(fixed) == "s (ISL 128, OSL 64)"


def test_a_plug_in_kind_is_read_by_its_recorded_traits() -> None:
    """A kind no reader names: what it recorded decides its curve, labels, shape and export."""
    merged = {**WorkloadTraits(merges_speculative_curve=True, has_sessions=True,
                               load_means="rungs").fields()}
    flat = _flat("ladder", **merged)
    rec = PointRecord.from_flat(flat)
    assert rec.traits == WorkloadTraits(True, True, False, "rungs")
    assert series_key(flat) == ("m", "cpu", "llamacpp", "q4")
    assert scenario_label(rec) == "s"  # no fixed shape: the name alone
    assert base_key(flat)[-1] == "s"
    # plain and speculative share the curve, so the gate's line names the plain one
    assert " · plain · " in point_label(PointRecord.from_flat({**flat, "spec_method": "none"}))
    assert any("session trees" in line for line in hover_lines({**flat, "qps": 1.0}))
    # the same kind recording the opposite traits is read the opposite way
    split = _flat("ladder", **WorkloadTraits(fixed_shape=True).fields())
    assert series_key(split)[-1] == "mtp"
    assert " · plain · " not in point_label(PointRecord.from_flat({**split, "spec_method": "none"}))
    assert scenario_label(PointRecord.from_flat(split)) == "s (ISL 128, OSL 64)"
    assert not any("session trees" in line for line in hover_lines(split))


def test_recorded_traits_survive_the_line_on_disk() -> None:
    rec = PointRecord.from_flat(_flat("ladder", has_sessions=True))
    again = PointRecord.from_flat(rec.flat())
    assert traits_of(again.flat()).has_sessions and again.traits.has_sessions
