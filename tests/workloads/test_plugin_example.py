"""docs/architecture.md's worked example stays true: its plug-in module and two YAMLs, written
where a user would keep them, add an engine kind and a workload kind that the registries list,
whose rules the check step asks, and that `harness sweep --dry-run` accepts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config.errors import ConfigError
from harness.config.locations import repo_root
from tests.config.test_config_errors import _compose, validated

DOC = repo_root() / "docs" / "architecture.md"
EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```\w+\n(.*?)```", re.S)


def _write_example(to: Path) -> list[str]:
    names = []
    for name, text in EXAMPLE.findall(DOC.read_text()):
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        (to / name).write_text(text)
        names.append(name)
    return names


@pytest.fixture
def plugin(tmp_path, monkeypatch) -> Path:
    assert _write_example(tmp_path) == ["tiny_plugin.py", "engine/tinyserve.yaml",
                                        "scenarios/ladder-128x64.yaml"]
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HARNESS_PLUGINS", "tiny_plugin")
    yield tmp_path
    from harness.engines import registry as engines
    from harness.workloads import registry as workloads

    sys.modules.pop("tiny_plugin", None)
    engines._REGISTRY.plugged.pop("tinyserve", None)  # the next test sees the shipped kinds only
    workloads._REGISTRY.plugged.pop("ladder", None)


def test_the_example_is_not_shipped() -> None:
    from harness.engines.registry import ENGINE_KINDS
    from harness.workloads.registry import WORKLOAD_KINDS

    assert "tinyserve" not in ENGINE_KINDS and "ladder" not in WORKLOAD_KINDS
    assert not (repo_root() / "recipes" / "engine" / "tinyserve.yaml").exists()


def test_the_registries_list_the_plugged_kinds_and_ask_their_rules(plugin) -> None:
    from harness.engines.engine_counters import ENGINE_COUNTERS
    from harness.engines.registry import engine_kinds
    from harness.workloads.registry import workload_class, workload_kinds

    assert engine_kinds()[-1] == "tinyserve" and workload_kinds()[-1] == "ladder"
    assert ENGINE_COUNTERS["tinyserve"].source == "tinyserve:tinyserve/metrics.py"
    base = ["engine=tinyserve", "scenarios=ladder-128x64"]
    cfg, where = _compose([*base, "concurrency=[8]"], extra_search=str(plugin))
    sc = validated(cfg, where)
    assert workload_class("ladder").load_axis(sc) == [1.0, 2.0, 4.0, 8.0]
    cfg, where = _compose([*base, "concurrency=[6]"], extra_search=str(plugin))
    with pytest.raises(ConfigError, match="not a power of two") as e:
        validated(cfg, where)
    assert e.value.key == "concurrency"
    cfg, where = _compose([*base, "concurrency=[8]", "++scenario.arrival=poisson",
                           "++scenario.request_rate=[1]"], extra_search=str(plugin))
    with pytest.raises(ConfigError, match="open-loop arrivals") as e:
        validated(cfg, where)


def test_harness_sweep_dry_run_accepts_the_plugged_kinds(plugin) -> None:
    env = {**os.environ, "HARNESS_PLUGINS": "tiny_plugin",
           "PYTHONPATH": os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "sweep", "--config-dir", str(plugin),
         "engine=tinyserve", "scenarios=ladder-128x64", "concurrency=[8]",
         f"results_dir={plugin}/res", "--dry-run"],
        capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "dry run: the config composes and validates" in r.stdout
    assert "-m tinyserve" in r.stdout and "--max-batch" in r.stdout
    assert not (plugin / "res").exists()
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "sweep", "--config-dir", str(plugin),
         "engine=tinyserve", "speculator=mtp", f"results_dir={plugin}/res", "--dry-run"],
        capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 2 and "tinyserve does not speculate" in r.stderr, r.stderr[-3000:]
