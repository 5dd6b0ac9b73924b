// harness dashboard: filters, axis choices, per-series Pareto frontiers drawn as monotone
// curves, full-identity tooltips. Everything from the JSON embedded in the page; no network.
// All text from configs and traces reaches the DOM through textContent, never innerHTML.
"use strict";

const DATA = JSON.parse(document.getElementById("harness-data").textContent);
const X_AXES = DATA.x_axes;  // [{key, label, better: "higher"|"lower"}]
const Y_AXES = DATA.y_axes;
const FILTERS = ["model", "precision", "chip", "engine", "spec_method"];

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

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

function scenarioKind(name) {
  const p = DATA.points.find(q => q.scenario === name);
  return p ? p.scenario_kind : "fixed";
}

function buildControls() {
  const c = document.getElementById("controls");
  const scen = uniq(DATA.points.map(p => p.scenario));
  // Open on the scenario with the most points.
  const count = s => DATA.points.filter(p => p.scenario === s).length;
  const first = DATA.default_scenario || scen.reduce((a, b) => (count(b) > count(a) ? b : a));
  c.appendChild(el("label", {for: "scenario"}, "Scenario "));
  const ss = select("scenario", scen.map(s => ({key: s, label: s})), first);
  // Agentic scenarios default to E2E-normalized interactivity P90, fixed ones to median.
  ss.addEventListener("change", () => {
    document.getElementById("xaxis").value = DATA.default_x_by_kind[scenarioKind(ss.value)];
  }, true);
  c.appendChild(ss);
  c.appendChild(el("label", {for: "xaxis"}, " x "));
  c.appendChild(select("xaxis", X_AXES, DATA.default_x_by_kind[scenarioKind(first)]));
  c.appendChild(el("label", {for: "yaxis"}, " y "));
  c.appendChild(select("yaxis", Y_AXES, DATA.default_y));
  const opt = el("input", {type: "checkbox", id: "optimal"});
  opt.addEventListener("change", render);
  c.appendChild(el("label", {for: "optimal"}, " optimal only "));
  c.appendChild(opt);
  const dates = uniq(DATA.points.map(p => p.date).filter(Boolean));
  for (const [id, v] of [["date_from", dates[0]], ["date_to", dates[dates.length - 1]]]) {
    c.appendChild(el("label", {for: id}, id === "date_from" ? " from " : " to "));
    const d = el("input", {type: "date", id});
    if (v) d.value = v;
    d.addEventListener("change", render);
    c.appendChild(d);
  }
  const f = document.getElementById("filters");
  for (const key of FILTERS) {
    const box = el("fieldset", {id: "filter-" + key});
    box.appendChild(el("legend", {}, key.replace("_", " ")));
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
  for (const fmt of ["png", "svg"]) {
    const b = el("button", {id: "export-" + fmt, type: "button"}, "Export " + fmt.toUpperCase());
    b.addEventListener("click", () => Plotly.downloadImage("chart", {format: fmt, filename: "harness", width: 1200, height: 700}));
    c.appendChild(b);
  }
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

// Pareto frontier of the valid points: points no other beats on both axes; x must be > 0.
// Invalid points stay on the chart (marked x) but never shape a frontier.
function frontier(pts, xk, yk, xHigher, yHigher) {
  const sx = xHigher ? 1 : -1, sy = yHigher ? 1 : -1;
  const cand = pts.filter(p => p.valid && Number.isFinite(p[xk]) && Number.isFinite(p[yk]) && p[xk] > 0);
  cand.sort((a, b) => (sx * b[xk] - sx * a[xk]) || (sy * b[yk] - sy * a[yk]));
  const keep = [];
  let best = -Infinity;
  for (const p of cand) if (sy * p[yk] > best) { keep.push(p); best = sy * p[yk]; }
  return keep.sort((a, b) => a[xk] - b[xk]);
}

// Monotone cubic (Fritsch-Carlson) through (xs, ys): no overshoot between frontier points.
function monotone(xs, ys, n) {
  const m = xs.length;
  if (m < 2) return [xs, ys];
  const d = [], t = new Array(m);
  for (let i = 0; i < m - 1; i++) d.push((ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]));
  t[0] = d[0]; t[m - 1] = d[m - 2];
  for (let i = 1; i < m - 1; i++) t[i] = d[i - 1] * d[i] <= 0 ? 0 : (d[i - 1] + d[i]) / 2;
  for (let i = 0; i < m - 1; i++) {
    if (d[i] === 0) { t[i] = 0; t[i + 1] = 0; continue; }
    const a = t[i] / d[i], b = t[i + 1] / d[i], s = a * a + b * b;
    if (s > 9) { const k = 3 / Math.sqrt(s); t[i] = k * a * d[i]; t[i + 1] = k * b * d[i]; }
  }
  const ox = [], oy = [];
  for (let i = 0; i < m - 1; i++) {
    const h = xs[i + 1] - xs[i];
    for (let j = 0; j < n; j++) {
      const u = j / n, h00 = (1 + 2 * u) * (1 - u) ** 2, h10 = u * (1 - u) ** 2;
      const h01 = u * u * (3 - 2 * u), h11 = u * u * (u - 1);
      ox.push(xs[i] + u * h);
      oy.push(h00 * ys[i] + h10 * h * t[i] + h01 * ys[i + 1] + h11 * h * t[i + 1]);
    }
  }
  ox.push(xs[m - 1]); oy.push(ys[m - 1]);
  return [ox, oy];
}

function hover(p) {
  return p.hover.map(line => line.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")).join("<br>");
}

function render() {
  const xa = X_AXES.find(a => a.key === document.getElementById("xaxis").value);
  const ya = Y_AXES.find(a => a.key === document.getElementById("yaxis").value);
  const optimal = document.getElementById("optimal").checked;
  const pts = visiblePoints();
  const bySeries = new Map();
  for (const p of pts) {
    if (!bySeries.has(p.series)) bySeries.set(p.series, []);
    bySeries.get(p.series).push(p);
  }
  const traces = [];
  let i = 0;
  for (const [series, sp] of [...bySeries.entries()].sort()) {
    const color = DATA.palette[i++ % DATA.palette.length];
    const front = frontier(sp, xa.key, ya.key, xa.better === "higher", ya.better === "higher");
    const shown = optimal ? front : sp.filter(p => Number.isFinite(p[xa.key]) && Number.isFinite(p[ya.key]));
    traces.push({
      type: "scatter", mode: "markers", name: series, legendgroup: series,
      x: shown.map(p => p[xa.key]), y: shown.map(p => p[ya.key]),
      text: shown.map(hover), hovertemplate: "%{text}<extra></extra>",
      marker: {color, size: 9, symbol: shown.map(p => p.valid ? "circle" : "x")},
      customdata: shown.map(p => p.point_id),
    });
    if (front.length >= 2) {
      const [cx, cy] = monotone(front.map(p => p[xa.key]), front.map(p => p[ya.key]), 16);
      traces.push({type: "scatter", mode: "lines", name: series + " (frontier)", legendgroup: series,
        showlegend: false, x: cx, y: cy, line: {color, width: 2}, hoverinfo: "skip"});
    }
  }
  const layout = {
    title: {text: DATA.title},
    xaxis: {title: {text: xa.label}, zeroline: false},
    yaxis: {title: {text: ya.label}, zeroline: false},
    hovermode: "closest", showlegend: true, legend: {orientation: "h", y: -0.2},
    margin: {t: 60, r: 20, b: 120, l: 80},
  };
  Plotly.react("chart", traces, layout, {displaylogo: false, responsive: true,
    toImageButtonOptions: {format: "svg", filename: "harness"}});
  document.getElementById("count").textContent =
    `${pts.length} points in ${bySeries.size} series`;
}

buildControls();
render();
