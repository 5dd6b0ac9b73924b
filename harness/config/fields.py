"""A setting declared once: its default, its bound or choices, and its one-line help live on the
dataclass field (`setting(...)`), and the range checks (harness.config.validate) and the
tables of docs/settings.md (harness.config.settings_doc) are read from there.

OmegaConf's structured configs ignore a field's metadata, so the schemas stay plain
dataclasses that Hydra composes; `dataclasses.fields()` reads the metadata back.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

_META = "harness_setting"


@dataclass(frozen=True)
class Setting:
    """What a field's metadata says about it. Bounds are inclusive (`ge`, `le`) or exclusive
    (`gt`, `lt`); `fix` is the example an error gives; `inf_ok` lets infinity mean "no cap";
    `noun` names the value in an unknown-choice error ("unknown transport 'curl'")."""

    help: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[str, ...] = ()
    fix: str = ""
    inf_ok: bool = False
    noun: str = ""

    @property
    def bounded(self) -> bool:
        return any(b is not None for b in (self.ge, self.gt, self.le, self.lt))

    def range_problem(self, v: float) -> str | None:
        """What is wrong with `v` against the bound (NaN and infinity never pass, except
        infinity where it means no cap), or None."""
        if self.inf_ok and v == math.inf:
            return None
        if not math.isfinite(v):
            return f"{v} is not a finite number"
        if self.gt is not None and v <= self.gt:
            return f"{v:g} is not above {self.gt:g}"
        if self.ge is not None and v < self.ge:
            return f"{v:g} is below {self.ge:g}"
        if self.lt is not None and v >= self.lt:
            return f"{v:g} is not below {self.lt:g}"
        if self.le is not None and v > self.le:
            return f"{v:g} is above the limit of {self.le:g}"
        return None

    def allowed(self) -> str:
        """The bound or the choices as docs/settings.md writes them: `>= 0`, `(0, 1]`."""
        if self.choices:
            return " \\| ".join(f"`{c}`" for c in self.choices)
        lo = self.gt if self.gt is not None else self.ge
        hi = self.lt if self.lt is not None else self.le
        if lo is not None and hi is not None:
            left = "(" if self.gt is not None else "["
            right = ")" if self.lt is not None else "]"
            return f"{left}{_num(lo)}, {_num(hi)}{right}"
        if lo is not None:
            return f"{'>' if self.gt is not None else '>='} {_num(lo)}"
        if hi is not None:
            return f"{'<' if self.lt is not None else '<='} {_num(hi)}"
        return ""


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def setting(default: Any = dataclasses.MISSING, *, help: str,
            factory: Callable[[], Any] | None = None, ge: float | None = None,
            gt: float | None = None, le: float | None = None, lt: float | None = None,
            choices: Sequence[str] = (), fix: str = "", inf_ok: bool = False,
            noun: str = "") -> Any:
    """A dataclass field with its bound, choices and help: `setting(1.0, gt=0, help=...)`.
    `factory` instead of `default` for a list, a dict or a nested config."""
    meta = about(help, ge=ge, gt=gt, le=le, lt=lt, choices=choices, fix=fix, inf_ok=inf_ok,
                 noun=noun)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def about(help: str, *, ge: float | None = None, gt: float | None = None,
          le: float | None = None, lt: float | None = None, choices: Sequence[str] = (),
          fix: str = "", inf_ok: bool = False, noun: str = "") -> dict[str, Setting]:
    """The same as field metadata, for a list or a dict: `field(default_factory=list,
    metadata=about("..."))` (linters know `field` builds a fresh default; not `setting`)."""
    return {_META: Setting(help=help, ge=ge, gt=gt, le=le, lt=lt, choices=tuple(choices),
                           fix=fix, inf_ok=inf_ok, noun=noun)}


def setting_of(f: dataclasses.Field) -> Setting | None:
    return f.metadata.get(_META)


def choices_of(schema: type, name: str) -> tuple[str, ...]:
    """A field's allowed values, for code that needs the list itself."""
    for f in dataclasses.fields(schema):
        if f.name == name and (s := setting_of(f)):
            return s.choices
    raise KeyError(f"{schema.__name__}.{name} declares no choices")


def default_of(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return f.default


def nested_schema(f: dataclasses.Field) -> type | None:
    """The dataclass a field holds when it is a nested config (`field(default_factory=X)`)."""
    if f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
        return None
    value = f.default_factory()  # type: ignore[misc]
    return type(value) if dataclasses.is_dataclass(value) else None


def declared(schema: type, prefix: str = "") -> Iterator[tuple[str, dataclasses.Field, Setting]]:
    """(dotted key, field, setting) for every field declared with `setting()`, nested configs
    included, in declaration order."""
    for f in dataclasses.fields(schema):
        s = setting_of(f)
        if s is not None:
            yield prefix + f.name, f, s
        sub = nested_schema(f)
        if sub is not None:
            yield from declared(sub, f"{prefix}{f.name}.")


def walk_values(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any, Setting]]:
    """(dotted key, value, setting) for every declared field of a built config, nested configs
    included (lists of rows are not walked: their own checks see each row)."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        s = setting_of(f)
        if s is not None:
            yield prefix + f.name, value, s
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            yield from walk_values(value, f"{prefix}{f.name}.")
