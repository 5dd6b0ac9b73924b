// Comparison views of the dashboard: throughput per GPU and cost per million tokens at target
// interactivities (table and bars), and trends over dates or revisions at one target.
// Values are interpolated on each series' frontier (interp.js). Text via textContent only.
"use strict";

function compareX(xa, load) {
  // interpolation runs along an interactivity (higher is better); latency axes fall back
  return xa.better === "higher" ? xa.key : DATA.default_x_by_load[load];
}

// the reader's name of an x axis key (never the key itself)
function xName(xk) {
  const a = X_AXES.find(x => x.key === xk);
  return a ? a.short : xk;
}

function parseTargets(text) {
  return text.split(",").map(s => Number(s.trim())).filter(v => Number.isFinite(v) && v > 0);
}

function bySeriesMap(pts) {
  const m = new Map();
  for (const p of pts) {
    if (!m.has(p.series)) m.set(p.series, []);
    m.get(p.series).push(p);
  }
  // by name, as Python sorts them (harness/publish/dashboards/figure.py), so a series has the
  // same colour on the page and in the CLI's PNG; sorting the entries themselves would compare
  // "name,[object Object]" strings and put "X · published" before "X"
  return new Map([...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

// Rows of the comparison table: one per series and target (the table and bars show these).
// dates "latest" (upstream's calculator: one date's rows per series, here each series' latest
// in the date range) or "range" (every date in the range on one frontier)
function latestDate(sp) {
  const last = sp.map(p => p.date || "").sort().pop();
  return sp.filter(p => (p.date || "") === last);
}

function compareRows(pts, xk, targets, tier, dates) {
  const costKey = "cost_per_mtok_" + tier;
  const rows = [];
  for (const [series, all] of bySeriesMap(pts)) {
    const sp = dates === "range" ? all : latestDate(all);
    for (const t of targets) {
      const r = interpolateOnFrontier(sp, t, xk, ["tput_per_gpu", costKey], "clamp");
      const src = sp.find(p => p.published && p.source);
      rows.push({series, target: t, published: sp.some(p => p.published),
        source: src ? src.source : null, tput: r ? r.tput_per_gpu : null,
        cost: r ? r[costKey] : null, clamped: r ? r.clamped : null,
        range: r ? r.x_range : null, date: dates === "range" ? "all" : (sp[0].date || "")});
    }
  }
  return rows;
}

// Numbers as `harness speculation` prints them (harness/publish/spec_report.py `_num`):
// three significant figures under 10, one decimal from 10, "–" for none; the same value
// reads the same on the page and in the terminal.
function num(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  return Math.abs(v) < 10 ? String(Number(v.toPrecision(3))) : v.toFixed(1);
}

// A target outside the frontier's range has no interpolated value ("–", as `harness
// speculation`); InferenceX's calculator clamps it to the range's edge, shown beside it.
function valueText(v, clamped) {
  if (v === null) return "–";
  return clamped ? `– (outside the frontier; clamped to its edge: ${num(v)})` : num(v);
}

function cell(tr, text, attrs) { tr.appendChild(el("td", attrs || {}, text)); }

function renderCompare(pts, xa, ya, load) {
  const xk = compareX(xa, load);
  const targets = parseTargets(document.getElementById("targets").value);
  const tier = document.getElementById("tier").value;
  const rows = compareRows(pts, xk, targets, tier, document.getElementById("compare-dates").value);
  const table = document.getElementById("compare-table");
  table.replaceChildren();
  // the one difference from `harness speculation` for the same target: which dates count
  table.appendChild(el("caption", {id: "compare-dates-note"},
    document.getElementById("compare-dates").value === "latest"
      ? "Each series' latest date in the range; `harness speculation` reads every date (dates: all in range gives its numbers)."
      : "Every date in the range on one frontier, as `harness speculation` reads them."));
  // a source column only where a published row is in view (ours have none to link)
  const sourced = rows.some(r => r.source);
  const head = el("tr");
  for (const h of ["series", "date", `target: ${xName(xk)} (tok/s/user)`, "tok/s/GPU", `$/Mtok (${tier})`, "frontier range", ...(sourced ? ["source"] : [])]) head.appendChild(el("th", {}, h));
  table.appendChild(head);
  for (const r of rows) {
    const tr = el("tr", {"data-series": r.series, "data-target": String(r.target)});
    cell(tr, r.series);
    cell(tr, r.date);
    cell(tr, String(r.target) + (r.clamped ? " (outside the frontier's range)" : ""));
    cell(tr, valueText(r.tput, r.clamped), {"data-metric": "tput_per_gpu", "data-value": String(r.tput), "data-clamped": String(!!r.clamped)});
    cell(tr, valueText(r.cost, r.clamped), {"data-metric": "cost", "data-value": String(r.cost), "data-clamped": String(!!r.clamped)});
    cell(tr, r.range ? `${r.range[0].toPrecision(4)}–${r.range[1].toPrecision(4)}` : "no valid frontier");
    if (sourced) {
      const td = el("td");
      if (r.source) td.appendChild(el("a", {href: r.source, class: "source"}, "source"));
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  // nothing interpolated (no valid frontier in view): no empty bar charts, a sentence instead
  const drawn = rows.some(r => r.tput !== null || r.cost !== null);
  const bars = document.getElementById("compare-bars");
  const empty = document.getElementById("compare-empty");
  bars.hidden = !drawn;
  empty.hidden = drawn;
  if (!drawn) {
    Plotly.purge(bars);
    empty.textContent = pts.length && !pts.some(p => p.valid)
      ? "Nothing to compare: the matching points in view are all invalid, so no series has a valid frontier " +
        "(each point's page says which rule failed). `harness speculation --include-invalid <run>` counts " +
        "invalid points, its rows marked valid NO; for exploration only, never for published figures."
      : "Nothing to compare: no series in view has a valid frontier reaching these targets.";
    return;
  }
  const traces = [];
  targets.forEach((t, j) => {
    // unclamped rows first: the legend draws a trace with its first bar's hatching
    const rt = rows.filter(r => r.target === t).sort((a, b) => Number(!!a.clamped) - Number(!!b.clamped));
    // a clamped value (the target outside the frontier: "–" in the table) is hatched, never
    // drawn as if it were interpolated
    const marker = {color: DATA.palette[j % DATA.palette.length],
      pattern: {shape: rt.map(r => (r.clamped ? "/" : "")), fillmode: "overlay", fgcolor: "#fff", solidity: 0.4}};
    const hover = rt.map(r => (r.clamped ? "outside the frontier: clamped to its edge" : "interpolated on the frontier"));
    const bar = {type: "bar", name: `${xName(xk)} = ${t}`, x: rt.map(r => r.series), legendgroup: String(t), marker,
      text: hover, hovertemplate: "%{x}<br>%{y:.4g} (%{text})<extra></extra>", textposition: "none"};
    traces.push({...bar, y: rt.map(r => r.tput)});
    traces.push({...bar, y: rt.map(r => r.cost), xaxis: "x2", yaxis: "y2", showlegend: false});
  });
  const order = [...new Set(rows.map(r => r.series))];
  const anyClamped = rows.some(r => r.clamped && (r.tput !== null || r.cost !== null));
  Plotly.react("compare-bars", traces, {
    title: {text: `Throughput per GPU and $/Mtok (${tier}) at target ${xName(xk)}` +
      (anyClamped ? "<br><sub>hatched: the target is outside the series' frontier; the bar is its edge's value (clamped)</sub>" : "")},
    barmode: "group",
    grid: {rows: 2, columns: 1, pattern: "independent"},
    yaxis: {title: {text: "tok/s/GPU"}}, yaxis2: {title: {text: `$/Mtok (${tier})`}},
    xaxis: {showticklabels: false, categoryorder: "array", categoryarray: order},
    xaxis2: {categoryorder: "array", categoryarray: order}, margin: {t: 60, r: 20, b: 200, l: 80}, height: 760,
  }, PLOT_CONFIG);
}

function trendKey(p, by) {
  return by === "revision" ? String(p.engine_version || p.harness_revision || "unknown") : p.date;
}

function renderTrend(pts, xa, ya, load) {
  const xk = compareX(xa, load);
  const target = Number(document.getElementById("trend-target").value);
  const by = document.getElementById("trend-by").value;
  const recipe = document.getElementById("recipe").value;
  const traces = [];
  let i = 0;
  for (const [series, sp] of bySeriesMap(pts)) {
    const color = DATA.palette[i++ % DATA.palette.length];
    if (recipe && recipe !== "all" && recipe !== series) continue;
    const groups = new Map();
    for (const p of sp) {
      const k = trendKey(p, by);
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(p);
    }
    // revisions in the order of their first date, dates in order
    const keys = [...groups.keys()].sort((a, b) => {
      const da = groups.get(a).map(p => p.date).sort()[0], db = groups.get(b).map(p => p.date).sort()[0];
      return by === "date" ? (a < b ? -1 : 1) : (da < db ? -1 : da > db ? 1 : 0);
    });
    const xs = [], ys = [];
    for (const k of keys) {
      const r = interpolateOnFrontier(groups.get(k), target, xk, [ya.key], "none");
      if (r && finite(r[ya.key])) { xs.push(k); ys.push(r[ya.key]); }
    }
    if (!xs.length) continue;
    const pub = sp.some(p => p.published);
    traces.push({type: "scatter", mode: "lines+markers", name: series, x: xs, y: ys,
      line: {color, dash: pub ? "dash" : "solid"}, marker: {symbol: pub ? "diamond" : "circle"}});
  }
  // a trend needs two dates (or revisions) in one series: one dot per series is no trend,
  // so say what there is and draw nothing
  const chart = document.getElementById("trend");
  const count = document.getElementById("trend-count");
  if (!traces.some(t => t.x.length >= 2)) {
    Plotly.purge(chart);
    chart.hidden = true;
    const one = traces.map(t => `${t.name}: ${t.y[0].toPrecision(4)} on ${t.x[0]}`);
    count.textContent = one.length
      ? `No trend to draw: every series has a value at ${xName(xk)} = ${target} on one ${by} only`
        + ` (${one.join("; ")}). Runs on other ${by === "date" ? "dates" : "revisions"} draw the trend.`
      : `No trend to draw: no series' frontier reaches ${xName(xk)} = ${target} (a target outside`
        + " a frontier's range gives no value); choose a target inside one.";
    return;
  }
  chart.hidden = false;
  Plotly.react("trend", traces, {
    title: {text: `${ya.short} at ${xName(xk)} = ${target}, by ${by}`},
    xaxis: {title: {text: by}, type: "category", categoryorder: by === "date" ? "category ascending" : "trace"}, yaxis: {title: {text: ya.label}},
    legend: {orientation: "h", y: -0.3}, margin: {t: 60, r: 20, b: 140, l: 80},
  }, PLOT_CONFIG);
  // a series with a value on one date only is a lone dot beside the lines: say which
  const lone = traces.filter(t => t.x.length < 2).map(t => t.name);
  count.textContent = `${traces.length} series with a value at the target` + (lone.length
    ? `; on one ${by} only (a dot, no trend): ${lone.join("; ")}` : "");
}
