"""What one line of points.jsonl must hold before any reader uses it.

Every reader (resume, dashboard, gate, table, exports) takes the line's values as the writer
typed them: `conc` an integer, metrics numbers. A line edited by hand or written by another tool
can break that (`"conc": "8"`), and the first comparison or `int()` deep in a chart then fails
with no file, line or field named. `line_problem` checks the fields a line carries against
`PointIdentity`'s types and the metric catalogue, so the reader can skip that one line and say
why (harness/record/points_file.py).

Fields a line does not carry are not required here, except the identity of a line that says it
is a point record of this schema (`schema_version` 2): resume and the tests write partial lines,
and version-1 lines are migrated on read.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from harness.record.chip_costs import CHIP_FIELDS
from harness.record.metrics import CATALOGUE
from harness.record.point_record import SCHEMA_VERSION, PointIdentity

_NUMBER = "a number"


def _describe(kinds: tuple[type, ...]) -> str:
    words = {str: "a string", int: "an integer", bool: "true or false", float: _NUMBER}
    named = [words[k] for k in kinds if k in words]
    if float in kinds and int in kinds:
        named.remove("an integer")
    return " or ".join(named + (["null"] if type(None) in kinds else []))


def _identity_types() -> dict[str, tuple[type, ...]]:
    out: dict[str, tuple[type, ...]] = {}
    for name, hint in typing.get_type_hints(PointIdentity).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        kinds = tuple(args)
        if float in kinds:  # JSON writes 2.0 as 2
            kinds = (int, *kinds)
        out[name] = kinds
    return out


IDENTITY_TYPES = _identity_types()
REQUIRED = tuple(f.name for f in dataclasses.fields(PointIdentity)
                 if f.default is dataclasses.MISSING)
# the values charts, tables and the gate compute with: catalogue keys with a direction
NUMERIC = tuple(k for k, m in CATALOGUE.items() if m.direction != "none") + CHIP_FIELDS
_AT_LEAST_ZERO = ("conc", "isl", "osl", "spec_k", "repeat")


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    if value is None:
        return type(None) in kinds
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, tuple(k for k in kinds if k is not bool))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fix(key: str, what: str) -> str:
    return (f"Fix: make '{key}' {what}, or delete the line (`harness sweep run_id=<the run>` "
            f"measures a deleted point again)")


def line_problem(line: dict[str, Any]) -> str | None:
    """Why this line cannot be read as a point (the field, what it holds, the fix), or None."""
    version = line.get("schema_version")
    if not _is(version, (int, type(None))):
        return (f"field 'schema_version' is {_shown(version)}, expected an integer. "
                f"{_fix('schema_version', 'an integer')}")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return (f"written by a newer harness (schema_version {version} > {SCHEMA_VERSION}); "
                "Fix: upgrade the harness to read it")
    for key, kinds in IDENTITY_TYPES.items():
        if key not in line:
            if version is not None and version >= 2 and key in REQUIRED:
                return f"field '{key}' is missing. {_fix(key, _describe(kinds))}"
            continue
        value = line[key]
        if value is None:
            if key in REQUIRED:
                return f"field '{key}' is null. {_fix(key, _describe(kinds))}"
            continue  # a null where the field has a default takes the default
        if not _is(value, kinds):
            what = _describe(tuple(k for k in kinds if k is not type(None)))
            return f"field '{key}' is {_shown(value)}, expected {what}. {_fix(key, what)}"
        if key in _AT_LEAST_ZERO and value < 0:
            return f"field '{key}' is {value}, below 0. {_fix(key, 'an integer >= 0')}"
    for key, kinds, what in (("point_id", (str,), "a string"), ("run_id", (str, type(None)),
                             "a string"), ("status", (str,), "a string"),
                             ("valid", (bool, type(None)), "true or false"),
                             ("invalid_reasons", (list, type(None)), "a list of strings")):
        if key in line and not _is(line[key], kinds):
            return f"field '{key}' is {_shown(line[key])}, expected {what}. {_fix(key, what)}"
    for key in NUMERIC:
        value = line.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return (f"field '{key}' is {_shown(value)}, expected a number or null. "
                    f"{_fix(key, 'a number')}")
    return _validity_problem(line.get("validity"))


def _validity_problem(rules: Any) -> str | None:
    """`validity`, where it is a list (schema 2), is read as rules: each an object with a
    name, ok and the fields of harness/record/validity.py's Rule."""
    if not isinstance(rules, list):
        return None  # absent, or a version-1 line: the verdict comes from `valid`
    for i, rule in enumerate(rules):
        where = f"validity[{i}]"
        if not isinstance(rule, dict):
            return f"field '{where}' is {_shown(rule)}, expected an object. " \
                   f"{_fix(where, 'a rule object')}"
        for key in ("name", "ok", "observed", "bound", "message"):
            if key not in rule:
                return f"field '{where}.{key}' is missing. {_fix(where, 'a whole rule')}"
        if not isinstance(rule["ok"], bool):
            return (f"field '{where}.ok' is {_shown(rule['ok'])}, expected true or false. "
                    f"{_fix(where + '.ok', 'true or false')}")
    return None
