// harness dashboard: filters, axis choices, per-series Pareto frontiers drawn as monotone
// curves, full-identity tooltips, published rows marked, markers linked to point pages,
// comparison and trend views (compare.js), the view's state in the URL hash.
// Everything from the JSON embedded in the page; no network.
// All text from configs and traces reaches the DOM through textContent, never innerHTML.
"use strict";

const DATA = JSON.parse(document.getElementById("harness-data").textContent);
const X_AXES = DATA.x_axes;  // [{key, label, better: "higher"|"lower"}]
const Y_AXES = DATA.y_axes;
const FILTERS = ["model", "precision", "chip", "engine", "spec_name"];
// the speculator by its own name (self_draft), not the method it runs (draft_model)
const FILTER_LEGENDS = {spec_name: "speculator"};
const VIEWS = ["frontier", "compare", "trend", "speculation"];
const PLOT_CONFIG = {displaylogo: false, responsive: true,
  toImageButtonOptions: {format: "svg", filename: "harness"}};

function uniq(values) { return [...new Set(values)].sort(); }

function select(id, options, value) {
  const s = el("select", {id});
  for (const o of options) {
    const opt = el("option", {value: o.key}, o.label);
    if (o.key === value) opt.selected = true;
    s.appendChild(opt);
  }
  s.addEventListener("change", render);
  return s;
}

function input(id, attrs, value) {
  const e = el("input", {id, ...attrs});
  e.value = value;
  e.addEventListener("change", render);
  return e;
}

// What a scenario's load counts, read from its points' recorded traits (harness/record/
// workload_traits.py): "sessions" (session trees replayed) or "requests".
function scenarioLoad(name) {
  const p = DATA.points.find(q => q.scenario === name);
  return p && p.has_sessions ? "sessions" : "requests";
}

function label(c, id, text) { c.appendChild(el("label", {for: id}, text)); }

function buildControls() {
  const c = document.getElementById("controls");
  label(c, "view", "View ");
  c.appendChild(select("view", VIEWS.map(v => ({key: v, label: v})), "frontier"));
  const scen = uniq(DATA.points.map(p => p.scenario));
  // Open on the scenario with the most points.
  const count = s => DATA.points.filter(p => p.scenario === s).length;
  const first = DATA.default_scenario || scen.reduce((a, b) => (count(b) > count(a) ? b : a));
  label(c, "scenario", " scenario ");
  const ss = select("scenario", scen.map(s => ({key: s, label: s})), first);
  // Agentic scenarios default to E2E-normalized interactivity P90, fixed ones to median.
  ss.addEventListener("change", () => {
    const load = scenarioLoad(ss.value);
    document.getElementById("xaxis").value = DATA.default_x_by_load[load];
    document.getElementById("targets").value = DATA.default_targets[load].join(",");
  }, true);
  c.appendChild(ss);
  label(c, "xaxis", " x ");
  c.appendChild(select("xaxis", X_AXES, DATA.default_x_by_load[scenarioLoad(first)]));
  label(c, "yaxis", " y ");
  c.appendChild(select("yaxis", Y_AXES, DATA.default_y));
  const opt = el("input", {type: "checkbox", id: "optimal"});
  opt.addEventListener("change", render);
  label(c, "optimal", " optimal only ");
  c.appendChild(opt);
  const dates = uniq(DATA.points.map(p => p.date).filter(Boolean));
  label(c, "date_from", " from ");
  c.appendChild(input("date_from", {type: "date"}, dates[0] || ""));
  label(c, "date_to", " to ");
  c.appendChild(input("date_to", {type: "date"}, dates[dates.length - 1] || ""));
  for (const fmt of ["png", "svg"]) {
    const b = el("button", {id: "export-" + fmt, type: "button"}, "Export " + fmt.toUpperCase());
    b.addEventListener("click", () => Plotly.downloadImage(activeChart(), {format: fmt, filename: "harness", width: 1200, height: 700}));
    c.appendChild(b);
  }
  buildCompareControls(scenarioLoad(first));
  buildFilters();
}

function buildCompareControls(load) {
  const c = document.getElementById("compare-controls");
  label(c, "targets", "target interactivities ");
  c.appendChild(input("targets", {type: "text", size: 16}, DATA.default_targets[load].join(",")));
  label(c, "tier", " price ");
  c.appendChild(select("tier", DATA.price_tiers.map(t => ({key: t, label: t})), DATA.price_tiers[0]));
  label(c, "compare-dates", " dates ");
  c.appendChild(select("compare-dates", [{key: "latest", label: "latest per series"},
    {key: "range", label: "all in range"}], "latest"));
  label(c, "trend-target", " trend target ");
  c.appendChild(input("trend-target", {type: "number", step: "any"}, String(DATA.default_targets[load][0])));
  label(c, "trend-by", " by ");
  c.appendChild(select("trend-by", [{key: "date", label: "date"}, {key: "revision", label: "revision"}], "date"));
  label(c, "recipe", " recipe ");
  const series = uniq(DATA.points.map(p => p.series));
  c.appendChild(select("recipe", [{key: "all", label: "all"}, ...series.map(s => ({key: s, label: s}))], "all"));
}

function buildFilters() {
  const f = document.getElementById("filters");
  for (const key of FILTERS) {
    const box = el("fieldset", {id: "filter-" + key});
    box.appendChild(el("legend", {}, FILTER_LEGENDS[key] || key.replace("_", " ")));
    for (const v of uniq(DATA.points.map(p => String(p[key])))) {
      const id = `f-${key}-${v}`;
      const cb = el("input", {type: "checkbox", id, "data-key": key, "data-value": v});
      cb.checked = true;
      cb.addEventListener("change", render);
      box.appendChild(cb);
      box.appendChild(el("label", {for: id}, v));
    }
    f.appendChild(box);
  }
}

function activeChart() {
  return {frontier: "chart", compare: "compare-bars", trend: "trend", speculation: "spec-chart"}[document.getElementById("view").value];
}

function selected(key) {
  return new Set([...document.querySelectorAll(`input[data-key="${key}"]:checked`)].map(e => e.dataset.value));
}

function visiblePoints() {
  const scen = document.getElementById("scenario").value;
  const from = document.getElementById("date_from").value;
  const to = document.getElementById("date_to").value;
  const sets = Object.fromEntries(FILTERS.map(k => [k, selected(k)]));
  return DATA.points.filter(p => p.scenario === scen
    && FILTERS.every(k => sets[k].has(String(p[k])))
    && (!from || !p.date || p.date >= from) && (!to || !p.date || p.date <= to));
}

function hover(p) {
  return p.hover.map(line => line.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")).join("<br>");
}

// The frontier drawn for a series: agentic scenarios keep only canonical winners (interp.js).
function seriesFrontier(sp, xa, ya, canonical) {
  const front = frontier(sp, xa.key, ya.key, xa.better === "higher", ya.better === "higher");
  return canonical ? front.filter(p => canonical.has(p.point_id)) : front;
}

function isSpeculative(p) {
  return Boolean(p.spec_name) && p.spec_name !== "none";
}

// invalid: x; published: diamond; speculative: an outlined triangle; plain: a circle
function markerSymbol(p, pub) {
  if (!p.valid) return "x";
  if (pub) return "diamond";
  return isSpeculative(p) ? "triangle-up" : "circle";
}

function renderFrontier(pts, xa, ya, load) {
  const optimal = document.getElementById("optimal").checked;
  const canonical = load === "sessions"
    ? canonicalIds(pts, ya.key, ya.better === "higher", DATA.default_x_by_load.sessions) : null;
  const traces = [];
  let i = 0;
  for (const [series, sp] of bySeriesMap(pts)) {
    const color = DATA.palette[i++ % DATA.palette.length];
    const pub = sp.some(p => p.published);
    const front = seriesFrontier(sp, xa, ya, canonical);
    // valid plain points first: the legend draws a series with its first point's marker,
    // which must not be an invalid point's x or (in a merged agentic series) a triangle
    const rank = p => (p.valid ? 0 : 2) + (isSpeculative(p) ? 1 : 0);
    const shown = (optimal ? front : sp.filter(p => finite(p[xa.key]) && finite(p[ya.key])))
      .slice().sort((a, b) => rank(a) - rank(b));
    traces.push({
      type: "scatter", mode: "markers", name: series, legendgroup: series,
      x: shown.map(p => p[xa.key]), y: shown.map(p => p[ya.key]),
      text: shown.map(hover), hovertemplate: "%{text}<extra></extra>",
      marker: {color, size: 9, symbol: shown.map(p => markerSymbol(p, pub)),
        line: {color: "#222", width: shown.map(p => (isSpeculative(p) ? 2 : 0))}},
      customdata: shown.map(p => p.page),
    });
    if (front.length >= 2) {
      const [cx, cy] = monotone(front.map(p => p[xa.key]), front.map(p => p[ya.key]), 16);
      traces.push({type: "scatter", mode: "lines", name: series + " (frontier)", legendgroup: series,
        showlegend: false, x: cx, y: cy, line: {color, width: 2, dash: pub ? "dash" : "solid"}, hoverinfo: "skip"});
    }
  }
  // a series that merges plain and speculative points (agentic) stays one curve; the marker
  // tells the two apart, and the note under the chart says how
  document.getElementById("spec-marker-note").hidden = ![...bySeriesMap(pts).values()]
    .some(sp => sp.some(isSpeculative) && sp.some(p => !isSpeculative(p)));
  const layout = {
    // what the chart shows, from the axes chosen (the page's heading is the run's title)
    title: {text: `${ya.short} vs ${xa.short} · ${document.getElementById("scenario").value}`},
    xaxis: {title: {text: xa.label}, zeroline: false},
    yaxis: {title: {text: ya.label}, zeroline: false},
    hovermode: "closest", showlegend: true, legend: {orientation: "h", y: -0.2},
    margin: {t: 60, r: 20, b: 120, l: 80},
  };
  Plotly.react("chart", traces, layout, PLOT_CONFIG);
  linkMarkers(document.getElementById("chart"));
  renderSources(pts);
}

// a marker opens its point page (the handler is bound once, on the first draw)
function linkMarkers(chart) {
  if (chart.dataset.linked) return;
  chart.dataset.linked = "1";
  chart.on("plotly_click", ev => {
    const page = ev.points && ev.points[0] && ev.points[0].customdata;
    if (page) window.location.href = page;
  });
}

function renderSources(pts) {
  const ul = document.getElementById("sources");
  ul.replaceChildren();
  const urls = uniq(pts.filter(p => p.published && p.source).map(p => p.source));
  for (const url of urls) {
    const li = el("li");
    li.appendChild(el("a", {href: url}, url));
    ul.appendChild(li);
  }
  // no published rows in view: no "Sources:" line with nothing under it, and no legend for
  // markers that are not drawn
  document.getElementById("sources-box").hidden = !urls.length;
  document.getElementById("published-note").hidden = !pts.some(p => p.published);
}

// View state <-> URL hash, so a link reproduces a view.
const STATE = {view: "view", scenario: "scenario", x: "xaxis", y: "yaxis", from: "date_from",
  to: "date_to", targets: "targets", tier: "tier", dates: "compare-dates",
  trend_target: "trend-target",
  trend_by: "trend-by", recipe: "recipe"};

function writeHash() {
  const q = new URLSearchParams();
  for (const [k, id] of Object.entries(STATE)) q.set(k, document.getElementById(id).value);
  if (document.getElementById("optimal").checked) q.set("optimal", "1");
  const off = [...document.querySelectorAll("input[data-key]:not(:checked)")]
    .map(e => `${e.dataset.key}:${e.dataset.value}`);
  if (off.length) q.set("off", off.join("|"));
  history.replaceState(null, "", "#" + q.toString());
}

function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  // a scenario without axes or targets takes its load's defaults
  const load = scenarioLoad(q.get("scenario") || document.getElementById("scenario").value);
  document.getElementById("xaxis").value = DATA.default_x_by_load[load];
  document.getElementById("targets").value = DATA.default_targets[load].join(",");
  for (const [k, id] of Object.entries(STATE)) {
    const e = document.getElementById(id);
    if (!q.has(k)) continue;
    const v = q.get(k);
    // a select only takes one of its options; a stale link falls back to the default
    if (e.tagName !== "SELECT" || [...e.options].some(o => o.value === v)) e.value = v;
  }
  document.getElementById("optimal").checked = q.get("optimal") === "1";
  for (const item of (q.get("off") || "").split("|").filter(Boolean)) {
    const [key, ...rest] = item.split(":");
    for (const e of document.querySelectorAll(`input[data-key="${key}"]`)) {
      if (e.dataset.value === rest.join(":")) e.checked = false;
    }
  }
}

function render() {
  const view = document.getElementById("view").value;
  const xa = X_AXES.find(a => a.key === document.getElementById("xaxis").value);
  const ya = Y_AXES.find(a => a.key === document.getElementById("yaxis").value);
  const load = scenarioLoad(document.getElementById("scenario").value);
  const pts = visiblePoints();
  for (const v of VIEWS) document.getElementById("view-" + v).hidden = v !== view;
  if (view === "frontier") renderFrontier(pts, xa, ya, load);
  else if (view === "compare") renderCompare(pts, xa, ya, load);
  else if (view === "speculation") renderSpeculation(document.getElementById("scenario").value);
  else renderTrend(pts, xa, ya, load);
  document.getElementById("count").textContent =
    `${pts.length} points in ${bySeriesMap(pts).size} series`;
  writeHash();
}

buildControls();
readHash();
render();
// a link followed to this page reproduces its view from the defaults (the page's own hash
// updates use replaceState, which fires no hashchange)
window.addEventListener("hashchange", () => location.reload());
