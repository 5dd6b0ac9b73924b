"""The C-parser YAML loader (harness.config.fast_yaml) loads every shipped config file to the
same data as OmegaConf's own loader, composes the same sweeps, and words a broken file's error
exactly as OmegaConf's loader does."""

from __future__ import annotations

import io

import pytest
import yaml
from omegaconf import _utils as omegaconf_utils

from harness.config import compose, fast_yaml
from harness.config.locations import repo_root

SHIPPED = sorted(p for d in ("recipes", "scenarios") for p in (repo_root() / d).rglob("*.yaml"))


def _load(loader, text: str):
    return yaml.load(io.StringIO(text), Loader=loader)


def test_the_fast_loader_is_libyamls_where_pyyaml_has_it() -> None:
    assert yaml.__with_libyaml__  # the venv's PyYAML wheel ships libyaml
    assert issubclass(fast_yaml.fast_loader(), yaml.CSafeLoader)


def test_every_shipped_yaml_file_loads_to_the_same_data() -> None:
    assert len(SHIPPED) > 200
    for path in SHIPPED:
        text = path.read_text()
        # repr, not ==: 1, 1.0 and True are equal in Python but are different config values
        assert repr(_load(fast_yaml.fast_loader(), text)) == \
            repr(_load(fast_yaml.reference_loader(), text)), path


SCALARS = """
ints: [1, -2, +3, 0o17, 0x1F, 1_000]
floats: [1.5, 1e3, 1.0e-3, -.5, .inf, -.Inf, .nan, 6.02e+23, 1_0.5]
bools: [true, false, yes, no, on, off, True]
nulls: [null, ~, ""]
strings: [2026-12-07, 2026-12-07T10:00:00Z, "1.5", '0x1F', 1:30, a b, "${oc.env:X}"]
nested: {a: {b: [1, {c: 2}]}}
multi: |
  line one
  line two
folded: >
  one
  two
"""


def test_scalars_resolve_as_omegaconf_resolves_them() -> None:
    """OmegaConf's own float pattern (1e3 is a float) and no timestamps (dates stay strings)."""
    fast = _load(fast_yaml.fast_loader(), SCALARS)
    assert repr(fast) == repr(_load(fast_yaml.reference_loader(), SCALARS))
    assert fast["floats"][1] == 1000.0 and isinstance(fast["floats"][1], float)
    assert fast["strings"][0] == "2026-12-07"


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",  # a duplicate key (OmegaConf's check)
    "a:\n  b: 1\n c: 2\n",  # bad indentation
    "a: [1, 2\n",  # unclosed flow sequence
    "a: !!python/object/apply:os.system [ls]\n",  # a tag that would run Python
    "a: b: c\n",  # mapping values not allowed here
    "a:\n\t- 1\n",  # a tab
])
def test_a_broken_file_gets_omegaconfs_own_error(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as slow:
        _load(fast_yaml.reference_loader(), text)
    with pytest.raises(yaml.YAMLError) as fast:
        _load(fast_yaml.fast_loader(), text)
    assert type(fast.value) is type(slow.value)
    assert str(fast.value) == str(slow.value)


@pytest.mark.parametrize("overrides", [
    [],
    ["recipe=dsr1-fp4-b200-sglang-mtp"],
    ["scenarios=agentic-weka-cpu-decode", "speculator=self_draft"],
    ["recipe=multinode/dsr1-fp4-b200-dynamo-sglang-mtp", "engine=endpoint",
     "engine.url=http://127.0.0.1:9", "engine.deployment={row}"],
])
def test_a_sweep_composes_the_same_with_either_loader(overrides, monkeypatch) -> None:
    """A shipped sweep, a catalog recipe, the agentic scenario, a multi-node row attached."""
    row = yaml.safe_load((repo_root() / "recipes" / "recipe" / "multinode"
                          / "dsr1-fp4-b200-dynamo-sglang-mtp.yaml").read_text())["search_space"][0]
    overrides = [o.format(row=row["deploy_recipe"]) for o in overrides]
    fast = compose.compose_sweep(overrides)
    monkeypatch.setattr(fast_yaml, "install", lambda: None)
    monkeypatch.setattr(omegaconf_utils, "get_yaml_loader", fast_yaml.reference_loader)
    assert compose.compose_sweep(overrides) == fast
