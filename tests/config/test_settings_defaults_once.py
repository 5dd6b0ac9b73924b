"""Code that carries settings beside the schema takes their defaults from the schema's fields,
so a default changed on the field changes everywhere."""

from __future__ import annotations

import dataclasses

from harness.client.streaming import ClientSettings
from harness.config.fields import default_of
from harness.config.schema_bench import ClientConfig


def test_client_settings_defaults_are_the_client_configs() -> None:
    schema = {f.name: default_of(f) for f in dataclasses.fields(ClientConfig)}
    shared = [f for f in dataclasses.fields(ClientSettings) if f.name in schema]
    assert len(shared) == 11, [f.name for f in shared]  # every client.* but agentic_workers
    for f in shared:
        assert f.default == schema[f.name], f.name
    # a client built without a config runs as the default sweep's
    built = ClientSettings(base_url="http://127.0.0.1:1")
    assert {f.name: getattr(built, f.name) for f in shared} == {
        f.name: schema[f.name] for f in shared}
