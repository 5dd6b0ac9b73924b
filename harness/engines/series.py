"""Prometheus series as the harness reads them: a metric name with optional label values, and
the arithmetic that is right for counters (sums over label sets, deltas between scrapes).

Samples are `harness.engines.prometheus.Sample` dicts ("name{labels}" -> value)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.engines.prometheus import Sample

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs: hashable, printable

_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def split_key(key: str) -> tuple[str, Labels]:
    """'name{a="x",b="y"}' -> ('name', (('a', 'x'), ('b', 'y'))). Escapes are undone."""
    name, brace, rest = key.partition("{")
    if not brace:
        return key.strip(), ()
    pairs = [(k, v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\"))
             for k, v in _LABEL.findall(rest.rstrip("}"))]
    return name.strip(), tuple(sorted(pairs))


def label_text(labels: Labels, drop: Iterable[str] = ()) -> str:
    """A readable rank key: 'dp_rank=1,tp_rank=1' (labels in `drop` left out)."""
    skip = set(drop)
    return ",".join(f"{k}={v}" for k, v in labels if k not in skip) or "-"


@dataclass(frozen=True)
class Series:
    """One metric, optionally restricted to label values (e.g. token_position="0")."""

    name: str
    where: Labels = ()

    def by_labels(self, sample: Mapping[str, float]) -> dict[Labels, float]:
        """Every label set of this metric that matches `where`, with its value."""
        out: dict[Labels, float] = {}
        want = dict(self.where)
        for key, value in sample.items():
            if not (key == self.name or key.startswith(self.name + "{")):
                continue
            name, labels = split_key(key)
            if name != self.name:
                continue
            have = dict(labels)
            if all(have.get(k) == v for k, v in want.items()):
                out[labels] = value
        return out

    def total(self, sample: Mapping[str, float]) -> float | None:
        """Sum over matching label sets: right for counters only. None when absent."""
        vals = self.by_labels(sample)
        return float(sum(vals.values())) if vals else None


def delta(series: Series | None, before: Sample, after: Sample) -> float | None:
    """after - before of a counter summed over its label sets. prometheus_client creates a
    labelled series at its first increment (SGLang, TensorRT-LLM, ATOM's per-count steps),
    so a series missing from a successful `before` scrape counted 0; from an empty (failed)
    scrape it is unknown. A counter that went backwards (engine restarted) is no delta."""
    if series is None:
        return None
    a, b = series.total(after), series.total(before)
    if b is None and before:
        b = 0.0
    if a is None or b is None or a < b:
        return None
    return a - b


