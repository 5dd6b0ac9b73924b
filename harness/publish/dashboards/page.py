"""The dashboard page: one self-contained offline HTML file (plotly.js inside, data inside).

Points from any number of run directories become a JSON payload embedded in the page; the
page's script (dashboard.js) draws throughput per GPU against interactivity (or the chosen
axes), one series per identity, the Pareto frontier of each as a monotone curve.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from harness.publish import spec_report
from harness.publish.curves import series_key, series_label, with_costs
from harness.publish.dashboards.capacity import capacity_figures, read_searches
from harness.publish.dashboards.labels import CPU_CAVEAT, is_illustrative, label, load_text
from harness.publish.dashboards.point_page import (
    NO_TELEMETRY,
    SUMMARY_KEYS,
    page_href,
    write_point_pages,
)
from harness.publish.ingest import is_published
from harness.publish.links import web_link
from harness.publish.spec_cost import cost_rows, why_uncosted
from harness.publish.speedup import base_key, base_label, group_series, spec_config
from harness.record.metrics import PRICE_TIERS, metric
from harness.record.point_load import load_flat
from harness.record.results import atomic_write
from harness.record.spec_names import spec_name
from harness.record.workload_traits import traits_of

# The axes a reader can choose, in menu order; labels and directions are the catalogue's.
X_AXIS_KEYS = ("median_intvty", "p90_intvty", "p99_intvty", "p90_e2e_intvty", "p75_e2e_intvty",
               "median_e2el", "median_ttft", "p99_ttft", "p90_tpot", "goodput_share")
Y_AXIS_KEYS = ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "goodput",
               "goodput_share",
               *(f"cost_per_mtok_{t}" for t in PRICE_TIERS),
               *(f"tok_per_dollar_{t}" for t in PRICE_TIERS), "tok_s_per_mw", "j_per_tok")


def _axis(key: str) -> dict[str, str]:
    return {"key": key, "label": label(key, shown=False), "short": label(key, with_unit=False),
            "better": metric(key).direction}


def _catalogued(key: str) -> bool:
    try:
        metric(key)
    except KeyError:
        return False
    return True


# Measured energy (telemetry) is an axis once the catalogue has it, beside the table-based one.
MEASURED_Y_KEYS = ("measured_j_per_tok", "measured_tok_s_per_mw")
X_AXES = [_axis(k) for k in X_AXIS_KEYS]
Y_AXES = [_axis(k) for k in (*Y_AXIS_KEYS, *MEASURED_Y_KEYS) if _catalogued(k)]
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#7f7f7f"]
_NUMERIC = {a["key"] for a in X_AXES + Y_AXES}


NOT_MEASURED = "n/a"


def _fmt(v: Any) -> str:
    """A figure for people: absent is "n/a", never "None"."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return NOT_MEASURED
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def shape_line(p: dict[str, Any]) -> str:
    """The scenario's shape: fixed ISL/OSL, or for agentic points the distribution the trace
    gave (p50/p90 of prompt and output tokens per request), which has no single ISL/OSL."""
    head = f"{load_text(p)} · {p.get('scenario')}"
    if traits_of(p).fixed_shape:
        return f"{head} (ISL {p.get('isl')}, OSL {p.get('osl')})"
    if p.get("median_input_tokens") is None:
        return f"{head} (ISL/OSL from the trace; not recorded on this point)"
    return (f"{head} (ISL p50 {_fmt(p.get('median_input_tokens'))} / p90 "
            f"{_fmt(p.get('p90_input_tokens'))}, OSL p50 {_fmt(p.get('median_output_tokens'))}"
            f" / p90 {_fmt(p.get('p90_output_tokens'))} tokens)")


def power_line(p: dict[str, Any]) -> str | None:
    """Measured energy when valid; why not when telemetry was read but failed; nothing when
    the host has none (the page says so once: `NO_TELEMETRY`)."""
    if p.get("measured_j_per_tok") is not None:
        return (f"measured {_fmt(p.get('measured_j_per_tok'))} J/token, "
                f"{_fmt(p.get('measured_avg_power_w'))} W avg per GPU")
    if p.get("power_source") in (None, "none"):
        return None
    why = ", ".join(p.get("power_reasons") or []) or "invalid"
    return f"power from {p.get('power_source')} not valid: {why}"


def has_telemetry(p: dict[str, Any]) -> bool:
    return p.get("measured_j_per_tok") is not None or p.get("power_source") not in (None, "none")


def hover_lines(p: dict[str, Any]) -> list[str]:
    """Everything that identifies a point, one line each (escaped by the page)."""
    lines = [
        series_label(series_key(p)),
        shape_line(p),
        f"TP {_fmt(p.get('tp'))} · EP {_fmt(p.get('ep'))} · DP-attention "
        f"{_fmt(p.get('dp_attention'))} · PP {_fmt(p.get('pp'))} · {_fmt(p.get('gpus'))} GPU(s)",
    ]
    spec = spec_name(p)
    if spec != "none":
        realised = p.get("spec_realised_al")
        injected = p.get("spec_acceptance_mode") == "injected"
        al = ((f"AL requested {_fmt(p.get('spec_acceptance_length'))} "
               f"({_fmt(p.get('spec_acceptance_source') or 'injected')}), ") if injected
              else f"AL not injected ({_fmt(p.get('spec_acceptance_source') or 'real')}), ") \
            + (f"realised {_fmt(realised)}" if realised is not None else "realised not observed")
        lines.append(f"speculator {spec} k={_fmt(p.get('spec_k'))} · {al}")
        if p.get("spec_unverified_ok"):
            lines.append("speculation UNVERIFIED: the engine's metrics showed none; the label "
                         "is kept by speculator.unverified_ok=true")
        # harness.evals.lossless: same prompts with and without the speculator
        lines.append(f"lossless check: {_fmt(p.get('lossless_verdict') or 'not run')}")
    for r in p.get("eval_results") or []:
        if isinstance(r, dict):
            lines.append(f"eval {_fmt(r.get('task'))}: {_fmt(r.get('score'))} ± "
                         f"{_fmt(r.get('stderr'))} (n {_fmt(r.get('n'))}, floor "
                         f"{_fmt(r.get('floor'))}{'' if r.get('passed') else ', BELOW'})")
    if traits_of(p).has_sessions:
        lines.append(
            f"{p.get('conc')} session trees · fit {_fmt(p.get('fit'))} · QPS {_fmt(p.get('qps'))} "
            f"req/s · prefix hits theoretical {_fmt(p.get('theoretical_hit_rate'))}, "
            f"server {_fmt(p.get('server_hit_rate'))}")
    if p.get("rate") is not None:
        lines.append(f"open loop: {p.get('arrival')} at {_fmt(p.get('rate'))} req/s, cap "
                     f"{p.get('conc') or 'none'} · send lag p99 "
                     f"{_fmt(p.get('send_lag_p99_ms'))} ms")
    if p.get("goodput") is not None:
        slo = ", ".join(f"{k} <= {_fmt(p.get(f'slo_{k}_ms'))} ms"
                        for k in ("ttft", "tpot", "e2el") if p.get(f"slo_{k}_ms") is not None)
        lines.append(f"goodput {_fmt(p.get('goodput'))} req/s ({_fmt(p.get('goodput_share'))} of "
                     f"requests met {slo})")
    if p.get("profile_start_ts") is not None:
        where = p.get("profile_traces") or p.get("profile_trace_dir") or "the server's trace dir"
        lines.append(f"engine profile: {where}")
    power = power_line(p)
    if power:  # measured from telemetry, beside (never replacing) the table-based J/token
        lines.append(power)
    lines += [
        f"engine {_fmt(p.get('engine_version') or p.get('engine_image') or p.get('engine'))}",
        f"interactivity p50 {_fmt(p.get('median_intvty'))} tok/s/user · "
        f"{_fmt(p.get('tput_per_gpu'))} tok/s/GPU",
        f"run {p.get('run_id')}" + (f" · {p['date']}" if p.get("date") else "")
        + ("" if p.get("valid") else " · INVALID"),
    ]
    return lines


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def payload_points(points: Iterable[dict[str, Any]], out: Path | None = None
                   ) -> list[dict[str, Any]]:
    """What the page's script needs of each point; `page` links its point page when the
    dashboard is written to `out`."""
    points = list(points)
    why = spec_why_index(points)
    res = []
    for p in with_costs(points):
        p = dict(p)
        p["date"] = str(p.get("date") or p.get("started_at") or "")[:10]
        p["published"] = is_published(p)
        # published rows are their own series, never merged into ours
        p["series"] = series_label(series_key(p)) + (" · published" if p["published"] else "")
        p["source"] = web_link(p.get("source"))
        p["spec_name"] = spec_name(p)  # the filter and the point page: self_draft, not its method
        p["hover"] = hover_lines(p)
        p["has_telemetry"] = has_telemetry(p)
        if p["published"] and p.get("source"):
            p["hover"].append(f"published: {p['source']}")
        keep = {k: _clean(p.get(k)) for k in (*_NUMERIC, *SUMMARY_KEYS)}
        for k in ("point_id", "run_id", "model", "precision", "chip", "engine", "spec_method",
                  "spec_name", "spec_k", "spec_acceptance_length", "spec_acceptance_mode",
                  "scenario", "scenario_kind", "conc", "valid", "date", "series", "hover",
                  "published", "source", "engine_version", "harness_revision",
                  "invalid_reasons", "power_valid", "has_telemetry", "_root", "rate",
                  "arrival", "validity", "chip_power_kw_all_in"):
            keep[k] = _clean(p.get(k))
        keep.update(traits_of(p).fields())  # how the page reads it (dashboard.js too)
        keep["page"] = page_href(out, p) if out is not None else None
        keep["spec_why"] = why.get((base_label(base_key(p)), spec_config(p).label(),
                                    p.get("conc")))
        if not spec_config(p).plain:
            keep["spec_why"] = reworded_why(keep["spec_why"], p, points)
        res.append(keep)
    return res


def reworded_why(why: str | None, p: dict[str, Any], points: Sequence[dict[str, Any]]
                 ) -> str:
    """The step-cost sentence, or why there is none; "no plain point" only where there is
    none at all, not where the plain point is there but invalid."""
    uncosted = why_uncosted(p, points)
    if why is None:
        return uncosted
    invalid_plain = "the plain point at this load is invalid"
    return why.replace("no plain point at this load", invalid_plain) \
        if invalid_plain in uncosted else why


def reworded_cost_rows(tables: dict[str, list[dict[str, Any]]],
                       points: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The speculation view's step-cost rows say what the point pages say: "the plain point
    at this load is invalid" where it is there but invalid, not "no plain point"."""
    invalid = {(base_label(base_key(q)), q.get("conc")) for q in points
               if spec_config(q).plain and q.get("status", "ok") == "ok"
               and not q.get("valid", True)}
    valid = {(base_label(base_key(q)), q.get("conc")) for q in points
             if spec_config(q).plain and q.get("valid", True)}
    for row in tables.get("cost", []):
        at = (row.get("base"), row.get("conc"))
        if at in invalid and at not in valid and isinstance(row.get("why"), str):
            row["why"] = row["why"].replace("no plain point at this load",
                                            "the plain point at this load is invalid")
    return tables


def spec_why_index(points: Sequence[dict[str, Any]]) -> dict[tuple, str]:
    """(base, speculator, load) -> the step-cost sentence of harness.publish.spec_cost."""
    rows = cost_rows(group_series(points))
    return {(r["base"], r["speculator"], r["conc"]): r["why"] for r in rows}


def _json_safe(obj: Any) -> Any:
    """NaN and infinities as null, all the way down (the page's JSON has no NaN)."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    return _clean(obj)


def _script_json(obj: Any) -> str:
    """JSON safe inside <script>: no '</' or '<!--' can end the element early."""
    text = json.dumps(obj, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _page_js() -> str:
    scripts = ("dom.js", "interp.js", "compare.js", "speculation.js", "dashboard.js")
    return "\n".join(resources.files("harness.publish.dashboards").joinpath(f).read_text()
                     for f in scripts)


def _telemetry_note(pts: Sequence[dict[str, Any]]) -> str:
    ours = [p for p in pts if not p.get("published")]
    bare = sum(1 for p in ours if not p.get("has_telemetry"))
    note = ("" if not bare else f'<p id="telemetry-note">{NO_TELEMETRY}'
            + ("" if bare == len(ours) else f" for {bare} of {len(ours)} points")
            + ": no measured energy; J/token and tokens/s per MW are the chip table's all-in "
              "power constant, not a measurement</p>")
    if any(is_illustrative(p) for p in ours):
        note += f'<p id="price-note">{html.escape(CPU_CAVEAT)}</p>'
    return note


_STYLE = """body { font-family: system-ui, sans-serif; margin: 16px; color: #222; }
#controls, #compare-controls, #filters { display: flex; flex-wrap: wrap; gap: 8px;
  align-items: center; margin-bottom: 8px; }
fieldset { border: 1px solid #ccc; padding: 4px 8px; }
#chart { width: 100%; height: 680px; }
#count { color: #666; font-size: 90%; }
#compare-bars, #trend { width: 100%; height: 680px; }
#compare-table td, #compare-table th { border: 1px solid #ddd; padding: 2px 6px; }
#compare-table { border-collapse: collapse; margin-bottom: 8px; }
#compare-table caption { text-align: left; color: #555; padding: 4px 0; }
#spec-chart { width: 100%; height: 520px; }
.spec-table { border-collapse: collapse; margin-bottom: 8px; }
.spec-table td, .spec-table th { border: 1px solid #ddd; padding: 2px 6px; }
.spec-table td[data-col="why"], .spec-table td[data-col="note"] { min-width: 28em; }
.spec-table td[data-col="base"] { min-width: 16em; }
#spec-al-chart { width: 100%; height: 480px; }
"""


def render_page(points: Sequence[dict[str, Any]], title: str, out: Path | None = None,
                payload: list[dict[str, Any]] | None = None, capacity: list | None = None) -> str:
    """The page; `payload` is `payload_points(points, out)` when the caller has it already."""
    from plotly.offline import get_plotlyjs

    # the rules' detail is the point page's; the dashboard carries only the verdict
    pts = [{k: v for k, v in p.items() if k not in ("_root", "validity")}
           for p in (payload if payload is not None else payload_points(points, out))]
    data = {
        "title": title,
        "points": pts,
        "x_axes": X_AXES,
        "y_axes": Y_AXES,
        # by what a scenario's load counts (dashboard.js scenarioLoad, from its points' traits)
        "default_x_by_load": {"requests": "median_intvty", "sessions": "p90_e2e_intvty"},
        "default_y": "tput_per_gpu",
        "palette": PALETTE,
        "price_tiers": list(PRICE_TIERS),
        "default_targets": {"requests": [20, 40, 60], "sessions": [1, 2, 5]},
        # where speculation pays (harness/publish/speedup.py), computed from every point
        "speculation": _json_safe(reworded_cost_rows(spec_report.build(points), points)),
        "capacity": capacity or [],
    }
    js, telemetry_note = _page_js(), _telemetry_note(pts)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
{_STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<div id="controls"></div>
<div id="compare-controls"></div>
<div id="filters"></div>
<div id="count"></div>
{telemetry_note}
<div id="view-frontier"><div id="chart"></div>
<p>Markers open the point's page; <b>x</b> marks an invalid point (never on a frontier)<span
id="published-note" hidden>; diamonds and dashed curves are published InferenceX rows</span>.</p>
<p id="spec-marker-note" hidden>Outlined triangles are speculative points, on the same curve as
the plain points (circles) they merge with; the tooltip names the speculator and its k.</p>
<div id="sources-box" hidden><p>Sources of the published rows:</p><ul id="sources"></ul></div>
</div>
<div id="view-compare" hidden><table id="compare-table"></table><p id="compare-empty" hidden></p>
<div id="compare-bars"></div></div>
<div id="view-trend" hidden><div id="trend-count"></div><div id="trend"></div></div>
<div id="view-speculation" hidden><div id="spec-chart"></div><div id="spec-al-chart" hidden></div>
<div id="spec-tables"></div></div>
<div id="capacity"></div>
<script type="application/json" id="harness-data">{_script_json(data)}</script>
<script>{get_plotlyjs()}</script>
<script>{js}</script>
<script>{_CAPACITY_JS}</script>
</body></html>
"""


# search=slo results (capacity.py): one chart each, under the frontier
_CAPACITY_JS = """(function () {
  const figs = JSON.parse(document.getElementById("harness-data").textContent).capacity || [];
  const box = document.getElementById("capacity");
  if (!figs.length) return;
  const h = document.createElement("h2");
  h.textContent = "Capacity at the SLO (search=slo)";
  box.appendChild(h);
  figs.forEach((f, i) => {
    const d = document.createElement("div");
    d.id = "capacity-" + i;
    box.appendChild(d);
    Plotly.newPlot(d, f.data, f.layout, {displaylogo: false, responsive: true});
  });
})();"""


def load_points(run_dirs: Iterable[Path]) -> list[dict[str, Any]]:
    """Flat points of the current schema (older results are migrated on read), each with
    `_root`, the run directory its request records are in."""
    return [{**p, "_root": str(d)} for d in run_dirs for p in load_flat([d])]


def write_dashboard(run_dirs: Sequence[Path], out: Path, title: str,
                    point_pages: bool = True) -> Path:
    out = Path(out)
    points = load_points(run_dirs)
    if not points:  # one bad line costs its point; a page of nothing helps nobody
        files = ", ".join(str(Path(d) / "points.jsonl") for d in run_dirs)
        raise ValueError(f"no readable point in {files} (any line skipped is named above); "
                         "give run directories with measured points (results/<run_id>)")
    payload = payload_points(points, out if point_pages else None)
    if point_pages:
        write_point_pages(payload, out)
    capacity = capacity_figures(read_searches(run_dirs), points)
    atomic_write(out, render_page(points, title, payload=payload,
                                  capacity=capacity).encode())
    return out
