"""A typed SweepConfig from the recipes without running the Hydra app (calibrate, tools)."""

from __future__ import annotations

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import open_dict

from harness.config import fast_yaml
from harness.config.groups import GROUP_DIRS, check_yaml_files
from harness.config.locations import repo_root
from harness.config.schema import SweepConfig
from harness.config.validate import Locator, to_sweep_config


def compose_sweep(overrides: list[str]) -> SweepConfig:
    if not any(o.split("=", 1)[0].lstrip("+") == "run_id" for o in overrides):
        overrides = [*overrides, "run_id=compose"]
    fast_yaml.install()
    check_yaml_files(overrides)
    GlobalHydra.instance().clear()
    search = f"hydra.searchpath=[file://{repo_root()}]"
    forced = [o if o.split("=", 1)[0] in GROUP_DIRS or o[:1] in "+~" else "++" + o
              for o in overrides]
    with initialize_config_dir(config_dir=str(repo_root() / "recipes"), version_base=None):
        cfg = compose("sweep", overrides=[*forced, search], return_hydra_config=True)
    choices = dict(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    GlobalHydra.instance().clear()
    return to_sweep_config(cfg, Locator(choices, overrides))
