"""What a point is, on disk and in memory: `PointIdentity` (what was measured) and `PointRecord`
(its metrics, validity, chip costs, provenance and workload facts), versioned.

One identity serves resume (its hash is the point id), gate matching, series and ingest. On
disk a point is one flat JSON line (the keys InferenceX's rows use, so their rows and ours share
tables); `schema_version` says how to read it, and lines written before it existed (version 1)
are migrated on read (tests/fixtures/results_v1/ holds one such run).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from harness.record.chip_costs import CHIP_FIELDS
from harness.record.metrics import CATALOGUE
from harness.record.validity import Validity
from harness.record.workload_traits import WorkloadTraits, traits_of

SCHEMA_VERSION = 2


def digest(obj: Any) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True, slots=True)
class PointIdentity:
    """Everything that changes what is measured, nothing that does not (run id, seed, time)."""

    model: str
    precision: str
    chip: str
    engine: str
    scenario: str
    scenario_kind: str
    conc: int
    isl: int = 0  # fixed-sequence shape; 0 for replayed traces
    osl: int = 0
    gpus: int = 1
    tp: int = 1
    ep: int = 1
    dp_attention: bool = False
    pp: int = 1
    hf_id: str | None = None
    engine_image: str | None = None
    engine_settings: str | None = None  # hash of the engine flags and environment
    scenario_settings: str | None = None  # hash of every scenario setting
    spec_method: str = "none"
    spec_k: int = 0
    spec_acceptance_mode: str = "none"
    spec_acceptance_length: float | None = None
    thinking: bool | None = None
    repeat: int = 0
    disagg: bool = False  # prefill and decode on separate GPU pools
    pcp: int = 1  # prefill context parallelism
    # Open-loop arrivals (docs/slo.md): the offered rate (req/s) and its process; `conc` is
    # then the in-flight cap (0: none). None / "closed": InferenceX's closed loop.
    rate: float | None = None
    arrival: str = "closed"

    # Fields that did not exist when point ids were first hashed: left out of the hash while
    # they hold their default, so the ids of earlier runs stay what they were.
    _LATER = ("disagg", "pcp", "rate", "arrival")

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def point_id(self) -> str:
        d = self.as_dict()
        for name in self._LATER:
            if d[name] == PointIdentity.__dataclass_fields__[name].default:
                del d[name]
        load = f"c{self.conc}" if self.rate is None else f"q{self.rate:g}"
        return f"{load}-r{self.repeat}-{digest(d)[:12]}"

    def match_key(self) -> tuple[Any, ...]:
        """What a gate matches across runs: the identity without the repeat and without what a
        gate exists to compare (the engine's image) or must check separately (settings)."""
        skip = {"repeat", "engine_image", "engine_settings", "scenario_settings", "hf_id"}
        return tuple(v for k, v in self.as_dict().items() if k not in skip)

    def settings(self) -> dict[str, str | None]:
        return {"engine_settings": self.engine_settings,
                "scenario_settings": self.scenario_settings}

    def series_key(self, merges_speculative_curve: bool) -> tuple[str, ...]:
        """One curve: (model, chip, engine, precision), plus the speculator where the kind keeps
        one curve per speculator (fixed-sequence: MTP and non-MTP are separate curves); the
        point's trait says (harness.record.workload_traits)."""
        base = (self.model, self.chip, self.engine, self.precision)
        if merges_speculative_curve:
            return base
        return (*base, self.spec_method or "none")

    @classmethod
    def from_flat(cls, d: Mapping[str, Any]) -> PointIdentity:
        fields = dataclasses.fields(cls)
        missing = [f.name for f in fields
                   if f.default is dataclasses.MISSING and d.get(f.name) is None]
        if missing:
            raise ValueError(f"the point lacks identity fields {missing}")
        # A null where the field has a non-null default (an ingested row without `ep`) takes
        # the default; nulls stay where null is a value of the field.
        return cls(**{f.name: d[f.name] for f in fields
                      if f.name in d and (d[f.name] is not None or f.default is None)})


IDENTITY_FIELDS = tuple(f.name for f in dataclasses.fields(PointIdentity))
PROVENANCE_FIELDS = ("job", "engine_version", "seed", "harness_revision", "started_at",
                     "finished_at", "measured_start_wall", "date", "source")
_STATUS_FIELDS = ("point_id", "run_id", "status", "valid", "invalid_reasons", "validity",
                  "schema_version")


@dataclass(frozen=True)
class PointRecord:
    point_id: str
    run_id: str
    identity: PointIdentity
    status: str  # ok | failed (failed points are measured again on resume)
    validity: Validity
    metrics: Mapping[str, Any] = field(default_factory=dict)
    chip: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, Any] = field(default_factory=dict)  # workload and engine facts
    schema_version: int = SCHEMA_VERSION

    @property
    def valid(self) -> bool:
        return self.status == "ok" and self.validity.valid

    @property
    def reasons(self) -> list[str]:
        return self.validity.reasons

    @property
    def traits(self) -> WorkloadTraits:
        """How its workload kind's points are read (recorded on the point)."""
        return traits_of(self)

    def series_key(self) -> tuple[str, ...]:
        return self.identity.series_key(self.traits.merges_speculative_curve)

    def get(self, key: str, default: Any = None) -> Any:
        """A flat key, as the line on disk spells it."""
        for part in (self.metrics, self.extras, self.provenance, self.chip):
            if key in part:
                return part[key]
        if key in IDENTITY_FIELDS:
            return getattr(self.identity, key)
        return self.flat().get(key, default)

    def flat(self) -> dict[str, Any]:
        """The line on disk: identity, status and verdict first, then everything measured."""
        return {
            "schema_version": self.schema_version,
            "point_id": self.point_id,
            "run_id": self.run_id,
            **self.identity.as_dict(),
            **self.provenance,
            **self.chip,
            "status": self.status,
            "valid": self.valid,
            "invalid_reasons": self.reasons,
            "validity": self.validity.to_json(),
            **self.metrics,
            **self.extras,
        }

    @classmethod
    def from_flat(cls, d: Mapping[str, Any]) -> PointRecord:
        """Read a line of any schema version (version 1: before validity rules existed)."""
        version = int(d.get("schema_version") or 1)
        if version > SCHEMA_VERSION:
            raise ValueError(f"written by a newer harness (schema {version} > "
                             f"{SCHEMA_VERSION}); upgrade to read it")
        if version >= 2 and isinstance(d.get("validity"), list):
            validity = Validity.from_json(d["validity"])
        else:
            validity = Validity.legacy(bool(d.get("valid")), d.get("invalid_reasons") or ())
        claimed = set(IDENTITY_FIELDS) | set(CHIP_FIELDS) | set(PROVENANCE_FIELDS) \
            | set(_STATUS_FIELDS)
        rest = {k: v for k, v in d.items() if k not in claimed}
        return cls(
            point_id=str(d.get("point_id") or ""),
            run_id=str(d.get("run_id") or ""),
            identity=PointIdentity.from_flat(d),
            status=str(d.get("status") or "ok"),
            validity=validity,
            metrics={k: v for k, v in rest.items() if k in CATALOGUE},
            chip={k: d[k] for k in CHIP_FIELDS if k in d},
            provenance={k: d[k] for k in PROVENANCE_FIELDS if k in d},
            extras={k: v for k, v in rest.items() if k not in CATALOGUE},
            schema_version=SCHEMA_VERSION,
        )
