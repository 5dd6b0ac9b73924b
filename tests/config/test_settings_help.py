"""Every setting of the schema says what it is: a field the sweep's config holds without help
would be a bare name in `harness sweep --help` and docs/settings.md."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

from harness.config.fields import about, nested_schema, setting, setting_of
from harness.config.schema import SCHEMA_OF_NODE, SweepConfig
from harness.config.settings_doc import sections


def leaves(schema: type, prefix: str = "") -> Iterator[tuple[str, dataclasses.Field]]:
    """(dotted key, field) for every field that is not itself a nested config, walked as
    settings_doc walks the sweep: the top level, then each node's schema."""
    for f in dataclasses.fields(schema):
        if prefix == "" and schema is SweepConfig and f.name in SCHEMA_OF_NODE:
            continue  # a node: walked below, as its own section
        sub = nested_schema(f)
        if sub is not None:
            yield from leaves(sub, f"{prefix}{f.name}.")
        else:
            yield prefix + f.name, f


def all_leaves() -> list[tuple[str, dataclasses.Field]]:
    out = list(leaves(SweepConfig))
    for node, schema in SCHEMA_OF_NODE.items():
        out += list(leaves(schema, node + "."))
    return out


def without_help(fields: list[tuple[str, dataclasses.Field]]) -> list[str]:
    return [k for k, f in fields if not ((s := setting_of(f)) and s.help.strip())]


def test_every_field_of_the_schema_has_help() -> None:
    fields = all_leaves()
    assert len(fields) >= 214, len(fields)  # the walk reaches every node and nested config
    assert without_help(fields) == [], "fields without help=: declare them with setting()"


def test_the_listing_and_the_tables_show_every_field() -> None:
    listed = {key for _, rows in sections() for key, _, _ in rows}
    assert listed == {k for k, _ in all_leaves()}


def test_the_walk_finds_a_field_without_help() -> None:
    @dataclass
    class Inner:
        told: int = setting(1, help="has help")
        bare: int = 2

    @dataclass
    class Outer:
        inner: Inner = field(default_factory=Inner)
        rows: list[int] = field(default_factory=list, metadata=about("has help too"))
        plain: list[int] = field(default_factory=list)

    assert without_help(list(leaves(Outer, "x."))) == ["x.inner.bare", "x.plain"]
