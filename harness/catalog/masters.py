"""InferenceX's master configs read at a checkout: `configs/nvidia-master.yaml` and
`configs/amd-master.yaml` (@843c6254: 152 + 56 keys), each key classified as upstream's matrix
generator treats it (utils/matrix_logic/generate_sweep_configs.py@843c6254 generate_full_sweep:
`multinode: true` keys go to the multi-node sweeps; a single-node key's `agentic-coding`
scenarios to the agentic sweep, its `fixed-seq-len` ones to the 1k1k/8k1k sweeps)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

MASTERS = ("configs/nvidia-master.yaml", "configs/amd-master.yaml")
RUNNERS = "configs/runners.yaml"
Kind = Literal["fixed", "agentic", "multinode"]


class MasterError(ValueError):
    pass


@dataclass(frozen=True)
class MasterKey:
    key: str
    master: str  # repo-relative path of the master file it is in
    entry: dict[str, Any]  # the key's mapping as written

    @property
    def kind(self) -> Kind:
        if self.entry.get("multinode", False):
            return "multinode"
        return "agentic" if "agentic-coding" in self.entry.get("scenarios", {}) else "fixed"

    @property
    def model(self) -> str:
        return str(self.entry.get("model", ""))

    @property
    def runner(self) -> str:
        return str(self.entry.get("runner", ""))


def load_masters(checkout: Path) -> list[MasterKey]:
    """Every key of both masters, in file order. A key in both files is an error upstream's
    validation also rejects (load_config_files merges them into one dict)."""
    out: list[MasterKey] = []
    seen: dict[str, str] = {}
    for rel in MASTERS:
        path = checkout / rel
        if not path.is_file():
            raise MasterError(f"{path}: not found; is {checkout} an InferenceX checkout?")
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            raise MasterError(f"{path}: expected a mapping of keys to configs")
        for key, entry in data.items():
            if key in seen:
                raise MasterError(f"{path}: key {key!r} is also in {seen[key]}")
            seen[key] = rel
            if not isinstance(entry, dict) or "scenarios" not in entry:
                raise MasterError(f"{path}: key {key!r} has no `scenarios` mapping")
            out.append(MasterKey(str(key), rel, entry))
    return out


def load_runners(checkout: Path) -> dict[str, Any]:
    return yaml.safe_load((checkout / RUNNERS).read_text()) or {}


def runner_nodes(runners: dict[str, Any], label: str) -> list[str]:
    """The runner nodes of one label (configs/runners.yaml `labels:`), in file order."""
    labels = runners.get("labels", runners)
    return list(labels.get(label, []))


def launcher_for(node: str) -> str:
    """The launcher script a node runs: benchmark-tmpl.yml's `launch_${RUNNER_NAME%%_*}.sh`."""
    return f"runners/launch_{node.split('_', 1)[0]}.sh"
