"""A page per point, in a sibling file set next to the dashboard (docs/dashboards.md):

    <stem>_points/plotly.min.js        plotly.js, once
    <stem>_points/point.js             the page script
    <stem>_points/<run>/<point>.html   one page per point: its data inline, no network

Latency distributions, throughput and in-flight over time, the point's time series, for
agentic points a request timeline (one row per lane and agent), and links to its siblings
(the same series and scenario at other load levels).
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from harness.dashboards.point_data import point_payload
from harness.results import atomic_write, safe_name

# Numbers shown in the page's table, when the point has them (energy from telemetry too).
SUMMARY_KEYS = ("conc", "tput_per_gpu", "output_tput_per_gpu", "median_intvty",
                "p90_e2e_intvty", "median_ttft", "p99_ttft", "median_tpot", "median_e2el",
                "qps", "measured_avg_power_w", "measured_j_per_tok", "measured_j_per_output_tok",
                "measured_tok_s_per_mw", "power_valid", "j_per_tok", "tok_s_per_mw")


def pages_dir(out: Path) -> Path:
    return out.with_name(f"{out.stem}_points")


def page_href(out: Path, p: dict[str, Any]) -> str:
    """The point page's address relative to the dashboard file."""
    return (f"{pages_dir(out).name}/{safe_name(str(p.get('run_id')))}/"
            f"{safe_name(str(p['point_id']))}.html")


def siblings(points: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each point's siblings (same series and scenario), ordered by load level then date."""
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        groups[(p.get("series"), p.get("scenario"))].append(p)
    out = {}
    for group in groups.values():
        group.sort(key=lambda q: (q.get("conc") or 0, str(q.get("date")), q["point_id"]))
        nav = [{"point_id": q["point_id"], "run_id": q.get("run_id"), "conc": q.get("conc"),
                "date": q.get("date"), "valid": q.get("valid"), "page": q["page"]}
               for q in group]
        for q in group:
            out[_key(q)] = nav
    return out


def _key(p: dict[str, Any]) -> str:
    return f"{p.get('run_id')}/{p['point_id']}"


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _script_json(obj: Any) -> str:
    text = json.dumps(_clean(obj), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_point(p: dict[str, Any], data: dict[str, Any], nav: list[dict[str, Any]],
                 dashboard_href: str) -> str:
    payload = {"point": {k: p.get(k) for k in ("point_id", "run_id", "series", "scenario",
                                                "scenario_kind", "valid", "published",
                                                "source", "hover", "invalid_reasons")},
               "summary": {k: p.get(k) for k in SUMMARY_KEYS if p.get(k) is not None},
               "data": data, "siblings": nav, "dashboard": dashboard_href}
    title = f"{p.get('series')} · {p.get('scenario')} · concurrency {p.get('conc')}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 16px; color: #222; }}
nav a {{ margin-right: 8px; }} nav .current {{ font-weight: bold; }}
.chart {{ width: 100%; height: 360px; }} .tall {{ height: 520px; }}
.grid {{ display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ddd; padding: 2px 6px; }}
.invalid {{ color: #b00; font-weight: bold; }}
</style></head>
<body>
<p><a id="back" href="{html.escape(dashboard_href)}">&larr; dashboard</a></p>
<h1>{html.escape(title)}</h1>
<nav id="siblings"></nav>
<ul id="identity"></ul>
<table id="summary"></table>
<h2>Latency distributions</h2>
<div class="grid" id="dists"></div>
<h2>Throughput and in flight over time</h2>
<div class="chart" id="over-time"></div>
<h2>Time series</h2>
<p id="series-note"></p>
<div class="chart tall" id="series"></div>
<h2 id="timeline-title">Request timeline</h2>
<div class="chart tall" id="timeline"></div>
<script type="application/json" id="point-data">{_script_json(payload)}</script>
{'<script src="../plotly.min.js"></script>' if data.get("has_requests") else ""}
<script src="../point.js"></script>
</body></html>
"""


def write_point_pages(points: Sequence[dict[str, Any]], out: Path) -> int:
    """Every point's page (each with `page`, `_root` set); returns how many were written."""
    from plotly.offline import get_plotlyjs

    base = pages_dir(out)
    base.mkdir(parents=True, exist_ok=True)
    atomic_write(base / "plotly.min.js", get_plotlyjs().encode())
    js = resources.files("harness.dashboards").joinpath("point.js").read_text()
    atomic_write(base / "point.js", js.encode())
    nav = siblings(points)
    back = f"../../{out.name}"
    for p in points:
        data = point_payload(p, Path(p["_root"]))
        path = out.parent / p["page"]
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, render_point(p, data, nav[_key(p)], back).encode())
    return len(points)
