"""`harness sweep --help` lists the settings of the chosen groups from the schemas' fields:
each one's composed value, its default, its range or choices and its help."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

from harness.config.fields import setting_of
from harness.config.schema_bench import ClientConfig
from harness.config.schema_speculator import SpeculatorConfig
from tests.config.settings_listing import parse_listing, settings_block
from tests.helpers import harness


def _field(schema: type, name: str):
    f = next(f for f in dataclasses.fields(schema) if f.name == name)
    s = setting_of(f)
    assert s is not None, name
    return f, s


def test_sweep_help_lists_each_setting_as_declared_on_its_field() -> None:
    r = harness("sweep", "client.timeout_s=60", "speculator=ngram", "--help")
    assert r.returncode == 0, r.stderr
    listed = parse_listing(settings_block(r.stdout))

    f, s = _field(ClientConfig, "timeout_s")
    value, help_ = listed["client.timeout_s"]
    assert value == f"60 (default {f.default})"  # the override, and the field's default
    assert help_ == f"{s.help}; range: > {s.gt:g}"

    f, s = _field(ClientConfig, "transport")
    assert listed["client.transport"] == (f.default, f"{s.help}; one of: {' | '.join(s.choices)}")

    f, s = _field(SpeculatorConfig, "k")
    value, help_ = listed["speculator.k"]  # the ngram group's own k, not the field's default 0
    assert value == f"4 (default {f.default})"
    assert help_ == f"{s.help}; range: [{s.ge:g}, {s.le:g}]"


def test_sweep_help_keeps_the_groups_and_the_footer() -> None:
    r = harness("sweep", "--help")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "== Config groups ==" in out and "\nengine: " in out
    assert "Most common overrides:" in out and "harness dashboard results/<run_id>" in out
    # the listing replaced Hydra's YAML dump of the config
    assert "\nclient:\n  timeout_s = 3600.0" in out and "\n  timeout_s: " not in out
    assert max(len(ln) for ln in settings_block(out).splitlines()) <= 120


def test_sweep_help_shows_an_interpolation_as_written_never_its_secret() -> None:
    """A value read from the environment is listed as its interpolation (Hydra's template
    would otherwise also take its `$` for a placeholder of its own)."""
    env = {**os.environ, "HARNESS_HELP_SECRET": "http://user:s3cr3t@127.0.0.1:9"}
    r = subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep", "engine=endpoint",
                        "engine.url=${oc.env:HARNESS_HELP_SECRET}", "--help"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "s3cr3t" not in r.stdout + r.stderr
    value, _ = parse_listing(settings_block(r.stdout))["engine.url"]
    assert value == "${oc.env:HARNESS_HELP_SECRET} (default null)"
