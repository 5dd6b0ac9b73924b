"""A page per point, in a sibling file set next to the dashboard (docs/dashboards.md):

    <stem>_points/plotly.min.js        plotly.js, once
    <stem>_points/point.js             the page script (and dom.js, shared with the dashboard)
    <stem>_points/<run>/<point>.html   one page per point: its data inline, no network
                                       (<point>: the id with the speculator and k,
                                       c1-ngram-k4-r0-<hash>)

Latency distributions, throughput and in-flight over time, the point's time series, for
agentic points a request timeline (one row per lane and agent), and links to its siblings
(the same series and scenario at other load levels).
"""

from __future__ import annotations

import hashlib
import html
import os
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from harness.publish.dashboards.labels import (
    CPU_CAVEAT,
    TABLE_ENERGY,
    is_illustrative,
    label,
    load_text,
)
from harness.publish.dashboards.point_data import point_payload
from harness.publish.dashboards.validity_rows import shown as _shown
from harness.publish.dashboards.validity_rows import validity_rows
from harness.publish.links import readable_point_name
from harness.record.catalogue import metric
from harness.record.results import atomic_write, safe_name
from harness.record.spec_names import spec_label, spec_name
from harness.record.workload_traits import traits_of

NO_TELEMETRY = "no power telemetry on this host"  # harness.publish.dashboards.page says it too

# Numbers shown in the page's table, when the point has them (energy from telemetry too).
SHOWN_KEYS = ("conc", "rate", "send_lag_p99_ms", "goodput", "goodput_share", "slo_ttft_ms",
              "slo_tpot_ms", "slo_e2el_ms", "slo_ttft_met_share", "slo_tpot_met_share",
              "slo_e2el_met_share", "tput_per_gpu", "output_tput_per_gpu", "median_intvty",
              "p90_e2e_intvty", "median_ttft", "p99_ttft", "median_tpot", "median_e2el",
              "qps", "measured_avg_power_w", "measured_j_per_tok", "measured_j_per_output_tok",
              "measured_tok_s_per_mw", "power_valid", "j_per_tok", "tok_s_per_mw",
              "spec_k", "spec_acceptance_length", "spec_realised_al", "spec_drafts",
              "spec_draft_tokens", "spec_accepted_tokens",
              "eval_gsm8k_score", "eval_gpqa_diamond_score", "lossless_ok",
              "lossless_verdict", "decode_slow_ratio")
# Read by the page's text, not shown as rows: the steadiness rule's slow requests and the
# output tokens that turn drafts into a share of decode steps.
CARRIED_KEYS = ("decode_slowest", "steady_warning", "total_output_tokens", "duration_s",
                "server_generation_tokens", "engine")
# What harness.publish.dashboards.page keeps of each point for its page.
SUMMARY_KEYS = (*SHOWN_KEYS, *CARRIED_KEYS)


def pages_dir(out: Path) -> Path:
    return out.with_name(f"{out.stem}_points")


def page_href(out: Path, p: dict[str, Any]) -> str:
    """The point page's address relative to the dashboard file."""
    return (f"{pages_dir(out).name}/{safe_name(str(p.get('run_id')))}/"
            f"{safe_name(readable_point_name(p))}.html")


def siblings(points: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each point's siblings (same series and scenario), ordered by load level then date."""
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        groups[(p.get("series"), p.get("scenario"))].append(p)
    out = {}
    for group in groups.values():
        # closed-loop loads first, then open-loop rates (a rate point's conc is its cap)
        group.sort(key=lambda q: (q.get("rate") is not None, q.get("rate") or 0,
                                  q.get("conc") or 0, str(q.get("date")), q["point_id"]))
        # one agentic series holds plain and speculative points: each link says which
        specs = [spec_label(q) for q in group]
        mixed = len(set(specs)) > 1
        nav = [{"point_id": q["point_id"], "run_id": q.get("run_id"), "conc": q.get("conc"),
                "load": load_text(q, short=True),
                "date": q.get("date"), "valid": q.get("valid"), "page": q["page"],
                "spec": spec if mixed else ""}
               for q, spec in zip(group, specs, strict=True)]
        for q in group:
            out[_key(q)] = nav
    return out


def _key(p: dict[str, Any]) -> str:
    return f"{p.get('run_id')}/{p['point_id']}"


def _default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"cannot serialise {type(o).__name__}")


def _script_json(obj: Any) -> str:
    """JSON safe inside <script> (no '</' or '<!--'); NaN becomes null (orjson)."""
    text = orjson.dumps(obj, default=_default, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


POWER_KEYS = {"measured_avg_power_w", "measured_j_per_tok", "measured_j_per_output_tok",
              "measured_tok_s_per_mw", "power_valid"}


def summary_rows(p: dict[str, Any]) -> list[list[str]]:
    """[label (unit), value] for the page's table, from the metric catalogue: names and units
    a reader knows, not keys. Power rows only where the host had telemetry (else one line)."""
    rows = []
    for k in SHOWN_KEYS:
        v = p.get(k)
        if v is None or (k in POWER_KEYS and not p.get("has_telemetry")):
            continue
        if k == "spec_k" and spec_name(p) == "none":  # a plain point drafts nothing
            continue
        if k == "conc" and p.get("rate") is not None:  # open loop: conc is the in-flight cap
            rows.append(["In-flight cap (open loop)", _shown(v) if v else "none"])
            continue
        if k == "conc" and traits_of(p).load_means != "concurrent requests":
            rows.append([f"Concurrency ({traits_of(p).load_means})", _shown(v)])
            continue
        try:
            scale = metric(k).scale
        except KeyError:
            scale = 1.0
        if isinstance(v, int | float) and not isinstance(v, bool):
            v = v * scale
        text = _shown(v)
        if k in TABLE_ENERGY and p.get("chip_power_kw_all_in") is not None:
            text += f" (from {_shown(1000 * p['chip_power_kw_all_in'])} W in the chip table)"
        rows.append([label(k), text])
    if not p.get("has_telemetry") and not p.get("published"):
        rows.append(["power", f"{NO_TELEMETRY}: energy figures above are the chip table's"
                     if any(k in p for k in TABLE_ENERGY) else NO_TELEMETRY])
    if is_illustrative(p):
        rows.append(["prices", CPU_CAVEAT])
    return rows


def al_counts_text(p: dict[str, Any]) -> str:
    """What the page's two acceptance lengths each count, in words, with the point's numbers
    where it has them: they differ by design, and a reader seeing 3.1 above a histogram at
    1.2 should not have to guess why (docs/speculation.md, "Realised and per-request AL")."""
    if not p.get("spec_method") or p.get("spec_method") == "none":
        return ""
    al = p.get("spec_realised_al")
    head = (f"Realised AL ({_shown(al)})" if isinstance(al, int | float) else "Realised AL")
    text = (f"{head} counts the engine's counters over the measured window: 1 + accepted "
            "draft tokens / drafts, so only the steps on which the speculator drafted count, "
            "and every request's steps are pooled (a long request weighs more). Per-request AL "
            "(the histogram) counts each request's reply: its output tokens / its decode steps "
            "(completion / (completion - accepted)), so every step counts, drafted or not, the "
            "first token (from prefill) included, and each request weighs once.")
    drafts, acc = p.get("spec_drafts"), p.get("spec_accepted_tokens")
    out = p.get("total_output_tokens")
    if all(isinstance(v, int | float) for v in (drafts, acc, out)) and out > acc:
        steps = out - acc
        text += (f" Here the engine drafted on {_shown(drafts)} of about {_shown(steps)} "
                 f"decode steps ({100 * drafts / steps:.0f}%): the fewer steps draft, the "
                 "further realised AL sits above per-request AL.")
    return text


def steady_marks(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The slowest tenth of requests where the engine_steady rule flagged the point (failed,
    or kept under validity.steady=warn), each with when it decoded in the page's seconds from
    the window's start (harness.record.steadiness)."""
    rules = [r for r in p.get("validity") or [] if isinstance(r, dict)
             and r.get("name") == "engine_steady"]
    flagged = any(not r.get("ok") for r in rules) or bool(p.get("steady_warning"))
    if not flagged:
        return []
    return [s for s in p.get("decode_slowest") or [] if isinstance(s, dict)]


def steady_text(marks: list[dict[str, Any]]) -> str:
    if not marks:
        return ""
    where = "; ".join(f"{m.get('id')} decoded at {_shown(m.get('ratio'))}x the median rate "
                      f"from {_shown(m.get('from_s'))} s to {_shown(m.get('to_s'))} s"
                      for m in marks)
    return (f"The engine was not steady (rule engine_steady): {where}. Look at the series "
            "below in those seconds for what slowed it.")


# Engines whose generated-token counter advances when a request finishes, not per token:
# llama.cpp's server_metrics::on_prediction adds a slot's n_decoded as it releases the slot
# (ggml-org/llama.cpp tools/server/server-context.cpp).
COUNTS_AT_FINISH = {"llamacpp": "llama.cpp"}


def rates_text(p: dict[str, Any]) -> str:
    """The server's generated-token rate over the same window as the client's output rate,
    and why the series' per-scrape server rate may not look like the client's chart."""
    dur, client, server = (p.get(k) for k in ("duration_s", "total_output_tokens",
                                              "server_generation_tokens"))
    if not all(isinstance(v, int | float) for v in (dur, client, server)) or not dur > 0:
        return ""
    text = (f"Over the measured window ({dur:.1f} s) the client received {client:.0f} output "
            f"tokens ({client / dur:.1f} tok/s) and the server's counter rose by {server:.0f} "
            f"({server / dur:.1f} tok/s).")
    name = COUNTS_AT_FINISH.get(str(p.get("engine")))
    if name:
        text += (f" {name} adds a request's tokens to its counter when the request finishes, "
                 "so the server rate in the time series (per scrape interval) comes in "
                 "spikes at request ends where the client's tokens/s above is steady.")
    return text


def _payload(p: dict[str, Any], data: dict[str, Any], nav: list[dict[str, Any]],
             dashboard_href: str) -> dict[str, Any]:
    keys = ("point_id", "run_id", "series", "scenario", "scenario_kind", "valid", "published",
            "source", "hover", "invalid_reasons", "spec_method", "spec_name", "spec_why",
            "spec_realised_al", "spec_drafts", "spec_draft_tokens", "spec_accepted_tokens")
    return {"point": {**{k: p.get(k) for k in keys}, **traits_of(p).fields()},
            "validity": validity_rows(p),
            "steady_marks": steady_marks(p),
            "summary": summary_rows(p),
            "data": data, "siblings": nav, "dashboard": dashboard_href}


def render_point(p: dict[str, Any], data: dict[str, Any], nav: list[dict[str, Any]],
                 dashboard_href: str) -> str:
    payload = _payload(p, data, nav, dashboard_href)
    spec = spec_label(p)
    # where plain and speculative points share a series, the plain one says so too
    shown = spec != "plain" or traits_of(p).merges_speculative_curve
    series = str(p.get("series"))
    named = f" · {spec_name(p)}"
    if shown:  # a fixed series' label names the speculator: say it once, there, with its k
        series = series.replace(named, f" · {spec}", 1) if named in series \
            else f"{series} · {spec}"
    title = f"{series} · {p.get('scenario')} · {load_text(p)}"
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
#validity caption {{ text-align: left; font-weight: bold; padding: 4px 0; }}
#validity tr.pass td[data-col="result"] {{ color: #070; }}
#validity tr.warned td {{ color: #8a5a00; }}
</style></head>
<body>
<p><a id="back" href="{html.escape(dashboard_href)}">&larr; dashboard</a></p>
<h1>{html.escape(title)}</h1>
<nav id="siblings"></nav>
<ul id="identity"></ul>
<table id="summary"></table>
<h2 id="validity-title" hidden>Validity checks</h2>
<table id="validity" hidden></table>
<h2 id="spec-title">Speculative decoding</h2>
<p id="spec-why"></p>
<p id="spec-note"></p>
<p id="spec-counts">{html.escape(al_counts_text(p))}</p>
<div class="grid" id="spec-dists"></div>
<h2>Latency distributions</h2>
<div class="grid" id="dists"></div>
<h2 id="slo-title" hidden>Requests against the SLO</h2>
<p id="slo-note"></p>
<div class="chart" id="slo" hidden></div>
<h2>Throughput and in flight over time</h2>
<p id="rates-note">{html.escape(rates_text(p))}</p>
<div class="chart" id="over-time"></div>
<h2>Time series</h2>
<p id="steady-marks" class="invalid">{html.escape(steady_text(steady_marks(p)))}</p>
<p id="series-note"></p>
<div id="series"></div>
<h2 id="timeline-title">Request timeline</h2>
<div class="chart tall" id="timeline"></div>
<script type="application/json" id="point-data">{_script_json(payload)}</script>
{'<script src="../plotly.min.js"></script>' if data.get("has_requests") else ""}
<script src="../dom.js"></script>
<script src="../point.js"></script>
</body></html>
"""


INDEX = "pages.json"  # page -> key of what it was built from: unchanged pages are kept
POOL_MIN = 400  # from this many pages to build, every core builds them


def _code_key() -> str:
    files = resources.files("harness.publish.dashboards")
    text = "".join(files.joinpath(f).read_text() for f in ("dom.js", "point.js", "point_data.py",
                                                          "point_page.py"))
    return hashlib.sha256(text.encode()).hexdigest()


def inputs_key(p: dict[str, Any], nav: list[dict[str, Any]], code: str) -> str:
    """What a page is built from: the point, its siblings, its files' sizes and times and
    the page code. Equal keys: the page on disk is still right."""
    root, pid = Path(p["_root"]), p["point_id"]
    stats: list[Any] = []
    for rel in (f"requests/{pid}.parquet", f"series/{pid}.parquet",
                f"server_metrics/{pid}.json"):
        try:
            st = os.stat(root / rel)
            stats.append([rel, st.st_mtime_ns, st.st_size])
        except FileNotFoundError:
            stats.append([rel, None])
    blob = orjson.dumps([code, stats, p, nav], default=_default,
                        option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


def _build(job: tuple[dict[str, Any], list[dict[str, Any]], str, str]) -> None:
    p, nav, back, path = job
    data = point_payload(p, Path(p["_root"]))
    _write_derived(Path(path), render_point(p, data, nav, back).encode())


def write_point_pages(points: Sequence[dict[str, Any]], out: Path) -> int:
    """Every point's page (each with `page`, `_root` set), rebuilding only those whose inputs
    changed since the last run; returns how many were built."""
    from plotly.offline import get_plotlyjs

    base = pages_dir(out)
    base.mkdir(parents=True, exist_ok=True)
    atomic_write(base / "plotly.min.js", get_plotlyjs().encode())
    for name in ("dom.js", "point.js"):
        js = resources.files("harness.publish.dashboards").joinpath(name).read_text()
        atomic_write(base / name, js.encode())
    try:
        index = orjson.loads((base / INDEX).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        index = {}
    nav, code, back = siblings(points), _code_key(), f"../../{out.name}"
    jobs, keys = [], {}
    for p in points:
        keys[p["page"]] = key = inputs_key(p, nav[_key(p)], code)
        path = out.parent / p["page"]
        if index.get(p["page"]) != key or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            jobs.append((p, nav[_key(p)], back, str(path)))
    workers = min(os.cpu_count() or 1, 8)
    if len(jobs) >= POOL_MIN and workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(_build, jobs, chunksize=64))
    else:
        for job in jobs:
            _build(job)
    _write_derived(base / INDEX, orjson.dumps(keys))
    return len(jobs)


def _write_derived(path: Path, data: bytes) -> None:
    """Replace a page whole (temp file + rename) without fsync: pages are derived from the
    run directory and rewritten by the next `harness dashboard`, and 10,000 fsyncs would
    cost most of the time it takes to write them."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
