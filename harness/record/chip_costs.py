"""A chip's power and price tiers as every point carries them (`chip_*` columns): the cost and
energy figures (docs/metrics.md, docs/energy.md) are computed from these. One spelling for a
measured point (from the sweep's chip config) and an ingested InferenceX row (from the chip
recipe's YAML), both shaped like recipes/chip/<name>.yaml."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChipCosts:
    tdp_w: float | None
    power_kw_all_in: float  # per GPU, with its share of the host
    cost_hyperscaler: float  # $ per GPU-hour, each tier
    cost_neocloud: float
    cost_rental_3yr: float

    @classmethod
    def of(cls, chip: Any) -> ChipCosts:
        """From a chip recipe: its YAML mapping or the sweep's ChipConfig."""
        d: Mapping[str, Any] = dataclasses.asdict(chip) if dataclasses.is_dataclass(chip) else chip
        tiers = d["cost_per_gpu_hr"]
        return cls(tdp_w=d.get("tdp_w"), power_kw_all_in=d["power_kw_all_in"],
                   cost_hyperscaler=tiers["hyperscaler"], cost_neocloud=tiers["neocloud"],
                   cost_rental_3yr=tiers["rental_3yr"])

    def columns(self) -> dict[str, Any]:
        """The point's `chip_*` columns."""
        return {f"chip_{k}": v for k, v in dataclasses.asdict(self).items()}


CHIP_FIELDS = tuple(f"chip_{f.name}" for f in dataclasses.fields(ChipCosts))
