"""The capacity result of a `search=slo` run on the dashboard (docs/slo.md): per criterion,
the statistic at every load the search measured (passing green, failing red), the SLO as a
horizontal line, and the highest passing and lowest failing loads as vertical lines. Read from
`<run>/search/*.json` and the run's points; pure figure building (plotly JSON)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.publish.dashboards.labels import label
from harness.record.slo_criteria import criteria, judge


def read_searches(run_dirs: Iterable[Path]) -> list[dict[str, Any]]:
    out = []
    for d in map(Path, run_dirs):
        for f in sorted((d / "search").glob("*.json")):
            out.append({**json.loads(f.read_text()), "run_dir": str(d), "job": f.stem})
    return out


def capacity_figures(searches: Sequence[dict[str, Any]],
                     points: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One plotly figure (data + layout) per search and criterion."""
    by_id = {(str(p.get("_root")), p["point_id"]): p for p in points}
    figs = []
    for s in searches:
        crit = criteria(s.get("criteria") or {})
        measured = [(m["load"], by_id.get((s["run_dir"], m["point_id"])))
                    for m in s.get("points", [])]
        measured = [(x, p) for x, p in measured if p is not None]
        axis = s.get("axis", "concurrency")
        for c in crit:
            ok = [(x, c.value(p)) for x, p in measured if judge(p, crit).ok]
            bad = [(x, c.value(p)) for x, p in measured if not judge(p, crit).ok]
            data = [_markers(ok, "passing", "#2ca02c"), _markers(bad, "failing", "#d62728")]
            shapes = [_hline(c.bound)]
            for load, color in ((s.get("highest_passing"), "#2ca02c"),
                                (s.get("lowest_failing"), "#d62728")):
                if load is not None:
                    shapes.append(_vline(load, color))
            unit = " ms" if c.key.endswith("_ms") else ""
            name = label(c.key, with_unit=False)
            n = s.get("num_points")
            # the run as well as the job: every run's first job is job0
            title = (f"{Path(s['run_dir']).name} · {s['job']}: {name} "
                     f"{'<=' if c.upper else '>='} {c.bound:g}{unit} · "
                     f"{search_outcome(s)} · {n} point{'' if n == 1 else 's'}")
            figs.append({"data": data, "layout": {
                "title": {"text": title, "font": {"size": 13}}, "shapes": shapes,
                # log, as the speculation view's load axis: loads double
                "xaxis": {"title": {"text": _AXIS_NAMES.get(axis, axis)},
                          "type": "log" if measured and all(x > 0 for x, _ in measured)
                          else "linear",
                          # ticked at the loads measured, as the speculation view's axis
                          "tickvals": sorted({x for x, _ in measured})},
                "yaxis": {"title": {"text": label(c.key)}},
                "margin": {"t": 50, "r": 20, "b": 50, "l": 60}, "height": 360}})
    return figs


_AXIS_NAMES = {"concurrency": "concurrency (requests in flight)",
               "rate": "arrival rate (req/s)"}


def search_outcome(s: dict[str, Any]) -> str:
    """The search's answer in words (a search/<job>.json or SloSearch.result); a bound it
    never found is said, not printed as None."""
    hp, lf = s.get("highest_passing"), s.get("lowest_failing")
    passing = (f"highest passing {hp:g}" if isinstance(hp, int | float)
               else "no load passed")
    failing = (f"lowest failing {lf:g}" + (f" ({label(str(s['breaching_metric']), False)})"
                                          if s.get("breaching_metric") else "")
               if isinstance(lf, int | float) else "no load tried failed")
    return f"{passing}, {failing}"


def _markers(xy: list[tuple[float, float]], name: str, color: str) -> dict[str, Any]:
    return {"type": "scatter", "mode": "markers", "name": name,
            "x": [x for x, _ in xy], "y": [y if math.isfinite(y) else None for _, y in xy],
            "marker": {"color": color, "size": 9}}


def _hline(y: float) -> dict[str, Any]:
    return {"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": y, "y1": y,
            "line": {"dash": "dash", "color": "#444"}}


def _vline(x: float, color: str) -> dict[str, Any]:
    return {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
            "line": {"dash": "dot", "color": color}}
