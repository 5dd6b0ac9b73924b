"""One dashboard view as a Plotly figure, for PNG/SVG export from the command line (kaleido,
driving the system's Chromium). The interactive page draws the same view in the browser."""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from harness.publish.curves import canonical_agentic_ids, monotone_curve, pareto_frontier
from harness.publish.dashboards.page import PALETTE, X_AXES, Y_AXES, payload_points


def _axis(axes: list[dict[str, str]], key: str) -> dict[str, str]:
    for a in axes:
        if a["key"] == key:
            return a
    raise ValueError(f"unknown axis {key!r}; choose one of {[a['key'] for a in axes]}")


def build_figure(points: list[dict[str, Any]], scenario: str | None, x: str, y: str,
                 optimal_only: bool = False, title: str = "") -> go.Figure:
    pts = payload_points(points)
    scenarios = sorted({p["scenario"] for p in pts})
    scenario = scenario or max(scenarios, key=lambda s: sum(p["scenario"] == s for p in pts))
    xa, ya = _axis(X_AXES, x), _axis(Y_AXES, y)
    by_series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    # colours by the series' rank among all of the scenario's, as the page gives them
    # (dashboard.js: a series without values on these axes still takes its colour)
    rank = {s: i for i, s in enumerate(sorted({p["series"] for p in pts
                                               if p["scenario"] == scenario}))}
    for p in pts:
        if p["scenario"] == scenario and p.get(x) is not None and p.get(y) is not None:
            by_series[p["series"]].append(p)
    fig = go.Figure()
    # agentic frontiers keep only InferenceX-app's canonical winners (harness.publish.curves)
    canonical = (canonical_agentic_ids([p for sp in by_series.values() for p in sp], y,
                                       ya["better"] == "higher")
                 if any(p["has_sessions"] for sp in by_series.values()
                        for p in sp) else None)
    for series, sp in sorted(by_series.items()):
        color = PALETTE[rank[series] % len(PALETTE)]
        # Invalid points stay visible (marked) but never shape a frontier.
        xs = [p[x] if p.get("valid") else None for p in sp]
        idx = pareto_frontier(xs, [p[y] for p in sp],
                              xa["better"] == "higher", ya["better"] == "higher")
        if canonical is not None:
            idx = [j for j in idx if sp[j]["point_id"] in canonical]
        shown = [sp[j] for j in idx] if optimal_only else sp
        fig.add_trace(go.Scatter(
            x=[p[x] for p in shown], y=[p[y] for p in shown], mode="markers", name=series,
            legendgroup=series, marker={"color": color, "size": 9, "symbol": [
                ("diamond" if p.get("published") else "circle") if p.get("valid") else "x"
                for p in shown]},
            hovertext=["<br>".join(p["hover"]) for p in shown], hoverinfo="text"))
        if len(idx) >= 2:
            cx, cy = monotone_curve([sp[j][x] for j in idx], [sp[j][y] for j in idx])
            fig.add_trace(go.Scatter(x=cx, y=cy, mode="lines", showlegend=False,
                                     legendgroup=series, line={"color": color, "width": 2},
                                     hoverinfo="skip"))
    # what the chart shows, named from its axes as on the page; the run's title beneath
    heading = f"{ya['short']} vs {xa['short']} · {scenario}"
    fig.update_layout(title=heading + (f"<br><sup>{title}</sup>" if title else ""),
                      xaxis_title=xa["label"], yaxis_title=ya["label"], showlegend=True,
                      legend={"orientation": "h", "y": -0.2}, template="plotly_white",
                      width=1200, height=700)
    return fig


def export_image(fig: go.Figure, path: Path) -> Path:
    """PNG or SVG by the file's extension; kaleido drives Debian's Chromium (no download)."""
    if "BROWSER_PATH" not in os.environ:
        for name in ("chromium", "chromium-browser", "google-chrome"):
            found = shutil.which(name)
            if found:
                os.environ["BROWSER_PATH"] = found
                break
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_image(str(path))
    return path
