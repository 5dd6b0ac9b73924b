"""A setting is declared once, on its schema field: the range and choice checks, the tables of
docs/settings.md and recipes/sweep.yaml's values all follow from it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from harness.config.errors import ConfigError
from harness.config.fields import Setting, declared, default_of, nested_schema, setting_of
from harness.config.locations import repo_root
from harness.config.schema import SCHEMA_OF_NODE, SweepConfig
from harness.config.settings_doc import BEGIN, END, page_path, settings_help, splice
from tests.config.settings_listing import parse_listing
from tests.config.test_config_errors import _compose, validated


def _declared() -> list[tuple[str, Setting]]:
    top = [(f.name, s) for f in dataclasses.fields(SweepConfig) if (s := setting_of(f))]
    nested = [(k, s) for node, schema in SCHEMA_OF_NODE.items()
              for k, _, s in declared(schema, node + ".")]
    return top + nested


def _outside(s: Setting) -> Any:
    """A value just outside the field's bound, or not among its choices."""
    if s.choices:
        return "no-such-choice"
    if s.gt is not None:
        return s.gt
    if s.ge is not None:
        return s.ge - 1
    return (s.lt if s.lt is not None else s.le + 1)  # type: ignore[operator]


CASES = [(k, s) for k, s in _declared() if s.bounded or s.choices]


def test_the_bounds_and_choices_are_on_the_fields() -> None:
    keys = {k for k, _ in CASES}
    assert len(keys) >= 69, len(keys)  # 58 bounds and 11 choices when they moved here
    for key in ("client.max_stamp_err_ms", "scenario.idle_cap_s", "speculator.sample_method",
                "chip.cost_per_gpu_hr.neocloud", "repeats", "seed"):
        assert key in keys, key
    assert all(s.help for _, s in _declared()), "every declared setting has its one-line help"


@pytest.mark.parametrize(("key", "s"), CASES, ids=[k for k, _ in CASES])
def test_a_value_outside_the_field_is_refused_with_its_fix(key: str, s: Setting) -> None:
    override = f"{key}={_outside(s)}"
    cfg, where = _compose([f"++{override}"])
    with pytest.raises(ConfigError) as ei:
        validated(cfg, where)
    e = ei.value
    assert e.key == key, str(e)
    assert e.where == f"the command-line override '{override}'", str(e)
    assert e.fix == (s.fix or f"use one of {s.choices}"), str(e)
    assert ("unknown" in e.problem) if s.choices else (
        "not above" in e.problem or "below" in e.problem or "above the limit" in e.problem)


@pytest.mark.parametrize("key", ["scenario.idle_cap_s", "scenario.tree_cap_s"])
def test_infinity_means_no_cap_only_where_the_field_says_so(key: str) -> None:
    cfg, where = _compose([f"++{key}=inf"])
    assert validated(cfg, where) is not None
    cfg, where = _compose(["++scenario.duration_s=inf"])
    with pytest.raises(ConfigError, match="not a finite number"):
        validated(cfg, where)


def test_docs_settings_tables_are_the_fields() -> None:
    page = page_path().read_text()
    assert BEGIN in page and END in page
    assert splice(page) == page, ("docs/settings.md's generated tables differ from the schemas: "
                                  "run python -m harness.config.settings_doc --write")
    assert "| `client.max_stamp_err_ms` | `1.0` | > 0 |" in page


def test_help_text_lists_every_declared_setting_with_its_bound() -> None:
    text = settings_help(width=80)
    listed = parse_listing(text)
    for key, s in _declared():
        assert key in listed, key
        _, help_ = listed[key]
        assert help_.startswith(s.help), (key, help_)
        assert not s.choices or f"one of: {' | '.join(s.choices)}" in help_, (key, help_)
    assert listed["client.max_stamp_err_ms"] == ("1.0", listed["client.max_stamp_err_ms"][1])
    assert listed["client.max_stamp_err_ms"][1].endswith("; range: > 0")
    assert listed["scenario.idle_cap_s"][1].endswith("; range: >= 0 or inf")
    assert max(map(len, text.splitlines())) <= 80, "the help wraps at the width"


def test_help_text_shows_the_composed_value_and_the_default_where_it_differs() -> None:
    listed = parse_listing(settings_help({"client": {"timeout_s": 60}, "repeats": 1}))
    assert listed["client.timeout_s"][0] == "60 (default 3600.0)"
    assert listed["repeats"][0] == "1"  # the default: not repeated
    assert listed["client.workers"][0] == "1"  # absent from the values: the default
    assert listed["model.name"][0] == "???"  # required and not set
    listed = parse_listing(settings_help({"model": {"name": "m"}}))
    assert listed["model.name"][0] == "m"  # a required field has no default to show


def _restated(node: dict, schema: type, prefix: str = "") -> list[str]:
    """Keys of a config mapping whose value is the schema's own default."""
    fields = {f.name: f for f in dataclasses.fields(schema)}
    out = []
    for name, value in node.items():
        f = fields.get(name)
        if f is None:
            continue
        sub = SCHEMA_OF_NODE.get(name) if schema is SweepConfig else nested_schema(f)
        if isinstance(value, dict) and sub is not None:
            out += _restated(value, sub, f"{prefix}{name}.")
        elif value == default_of(f) and type(value) is not dict:
            out.append(prefix + name)
    return out


def test_sweep_yaml_restates_no_default() -> None:
    text = (repo_root() / "recipes" / "sweep.yaml").read_text()
    doc = yaml.safe_load(text)
    # the hydra block interpolates these, so they stay spelt out
    needed = {k for k in doc if "${" + k + "}" in yaml.safe_dump(doc.get("hydra", {}))}
    values = {k: v for k, v in doc.items() if k not in ("defaults", "hydra", *needed)}
    assert _restated(values, SweepConfig) == []
    # the check sees a restated default at any depth
    assert _restated({"client": {"max_stamp_err_ms": 1.0, "workers": 2}, "repeats": 1},
                     SweepConfig) == ["client.max_stamp_err_ms", "repeats"]
    assert _restated({"speculator": {"acceptance": {"confidence": 0.999}}},
                     SweepConfig) == ["speculator.acceptance.confidence"]
