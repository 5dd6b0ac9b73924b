"""Stand-in for srtctl.core.config (test fixture)."""
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import yaml


@dataclass(frozen=True)
class Config:
    name: str
    model_path: str
    container: str
    resources: SimpleNamespace
    frontend: SimpleNamespace
    backend_type: str
    prefill_args: tuple
    decode_args: tuple
    setup_script: str | None = None


def load_config(path):
    raw = yaml.safe_load(Path(path).read_text())
    return Config(raw["name"], raw["model"]["path"], raw["model"]["container"],
                  SimpleNamespace(**raw["resources"]), SimpleNamespace(type="dynamo"),
                  "fake", tuple(raw["prefill"]), tuple(raw["decode"]))
