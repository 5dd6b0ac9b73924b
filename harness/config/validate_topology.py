"""Rules across the topology section's fields (docs/methodology.md §1), run for every launch
by harness.config.validate.check_combinations."""

from __future__ import annotations

from harness.config.errors import ConfigError, Where
from harness.config.schema import SweepConfig


def check_topology(sc: SweepConfig, where: Where) -> None:
    """Every parallel size at least 1, and a decode context parallel size that divides tp.
    Run for every launch: a catalog row replaces the recipe's topology."""
    t = sc.topology
    for name in ("tp", "ep", "pp"):
        if getattr(t, name) < 1:
            key = f"topology.{name}"
            raise ConfigError.at(where, key, f"{name} must be >= 1, got "
                                 f"{getattr(t, name)}", f"e.g. {key}=1 (tp=8: eight GPUs)")
    for name in ("dcp", "pcp"):
        if getattr(t, name) < 1:
            key = f"topology.{name}"
            raise ConfigError.at(where, key, f"{name} must be >= 1, got {getattr(t, name)}",
                                 f"{key}=1 turns it off")
    if t.dcp > 1 and t.tp % t.dcp:
        raise ConfigError.at(where, "topology.dcp",
                             f"decode context parallel {t.dcp} does not divide tp {t.tp}",
                             "pick a dcp that divides tp (it splits the KV over the TP ranks)")
