// harness point page: latency distributions, throughput and in-flight over time, time series,
// request timeline, sibling navigation. Data from the JSON inside the page; no network.
// Text from configs and traces reaches the DOM through textContent, never innerHTML.
"use strict";

const P = JSON.parse(document.getElementById("point-data").textContent);
const D = P.data;
// a short toolbar (export, zoom, pan, reset) and titles on the left: the toolbar sits top
// right and would cover a centred title on a half-width chart
const CONFIG = {displaylogo: false, responsive: true,
  modeBarButtonsToRemove: ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"],
  toImageButtonOptions: {format: "svg", filename: "harness-point"}};
const TITLE = text => ({text, x: 0.01, xanchor: "left", font: {size: 14}});
const WARMUP = "rgba(128,128,128,0.15)";

function fmt(v) {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toPrecision(4);
  return String(v);
}

function header() {
  const ul = document.getElementById("identity");
  for (const line of P.point.hover || []) ul.appendChild(el("li", {}, line));
  if (!P.point.valid) {
    ul.appendChild(el("li", {class: "invalid"},
      "INVALID: " + (P.point.invalid_reasons || []).join("; ")));
  }
  if (P.point.published && P.point.source) {
    const li = el("li", {}, "published row: ");
    li.appendChild(el("a", {href: P.point.source, id: "source-link"}, P.point.source));
    ul.appendChild(li);
  }
  const t = document.getElementById("summary");
  for (const [k, v] of P.summary) {  // [label (unit), value], from the metric catalogue
    const tr = el("tr");
    tr.appendChild(el("th", {}, k));
    tr.appendChild(el("td", {}, v));
    t.appendChild(tr);
  }
  if (D.has_requests) {
    const tr = el("tr", {id: "request-count"});
    tr.appendChild(el("th", {}, "requests (measured, ok)"));
    tr.appendChild(el("td", {}, `${D.requests} (${D.measured}, ${D.ok})`));
    t.appendChild(tr);
  }
  const nav = document.getElementById("siblings");
  nav.appendChild(el("span", {}, "siblings: "));
  const i = P.siblings.findIndex(s => s.point_id === P.point.point_id && s.run_id === P.point.run_id);
  const link = (s, label, id) => {
    const a = el("a", {href: "../../" + s.page}, label);
    if (id) a.id = id;
    nav.appendChild(a);
  };
  if (i > 0) link(P.siblings[i - 1], "< previous", "prev");
  P.siblings.forEach((s, j) => {
    const what = `${s.load || "c" + s.conc}${s.spec ? " " + s.spec : ""} ${s.date || ""}`;
    if (j === i) nav.appendChild(el("span", {class: "current"}, `${what} `));
    else link(s, `${what}${s.valid ? "" : " (invalid)"}`);
  });
  if (i >= 0 && i < P.siblings.length - 1) link(P.siblings[i + 1], "next >", "next");
}

// Every recorded rule, passing ones worded as passes (observed against the bound), failing
// ones with their sentence and fix (harness/publish/dashboards/point_page.py validity_rows).
function validity() {
  const rows = P.validity || [];
  if (!rows.length) return;
  document.getElementById("validity-title").hidden = false;
  const t = document.getElementById("validity");
  t.hidden = false;
  const passed = rows.filter(r => r.result === "pass").length;
  // a rule set to warn that breached: the point was kept, the rule did not pass (validity_rows.py)
  const warned = rows.filter(r => r.result.startsWith("warning")).length;
  const cap = el("caption", {id: "validity-count"}, `${passed} of ${rows.length} rules pass` +
    (warned ? `, ${warned} kept with a warning` : ""));
  t.appendChild(cap);
  const head = el("tr");
  for (const h of ["rule", "result", "observed", "bound", "note (a failure and its fix)"]) head.appendChild(el("th", {}, h));
  t.appendChild(head);
  for (const r of rows) {
    const tr = el("tr", {class: r.result === "pass" ? "pass" : r.result.startsWith("warning") ? "warned" : "invalid", "data-rule": r.rule});
    for (const k of ["rule", "result", "observed", "bound", "detail"]) tr.appendChild(el("td", {"data-col": k}, r[k]));
    t.appendChild(tr);
  }
}

function warmupShape(x1) {
  return {type: "rect", xref: "x", yref: "paper", x0: Math.min(x1, -1e-9), x1: 0, y0: 0, y1: 1,
    fillcolor: WARMUP, line: {width: 0}, layer: "below"};
}

// Where the engine was not steady (harness/record/steadiness.py: the slowest tenth's decode
// spans), shaded on every chart over time.
const UNSTEADY = "rgba(214,39,40,0.12)";
function markShapes(x1) {
  return [warmupShape(x1), ...(P.steady_marks || []).map(m => ({type: "rect", xref: "x",
    yref: "paper", x0: m.from_s, x1: m.to_s, y0: 0, y1: 1, fillcolor: UNSTEADY,
    line: {width: 0}, layer: "below"}))];
}

function t0Min() {
  const t = D.over_time.t;
  return t.length ? t[0] : 0;
}

// A histogram's count axis: whole requests, every one ticked while the tallest bar is short
// (Plotly's own ticks would fall at 0.5, 1.5, 2.5 requests)
function countAxis(counts) {
  const top = Math.max(0, ...(counts || []));
  return {title: {text: "requests"}, rangemode: "tozero", tickformat: "d",
    ...(top <= 10 ? {dtick: 1} : {})};
}

function distributions() {
  const box = document.getElementById("dists");
  const names = {ttft: "TTFT (s)", tpot: "TPOT (s)", itl: "ITL per chunk (s)", e2el: "E2E latency (s)"};
  for (const [k, label] of Object.entries(names)) {
    const d = D.dist[k];
    const div = el("div", {class: "chart", id: "dist-" + k});
    box.appendChild(div);
    Plotly.newPlot(div, [
      {type: "bar", name: "count", x: d.hist_x, y: d.hist_y, width: d.hist_width,
       marker: {color: "#1f77b4"}},
      {type: "scatter", mode: "lines", name: "CDF", x: d.cdf_x, y: d.cdf_y, yaxis: "y2",
       line: {color: "#d62728", shape: "hv"}},
    ], {title: TITLE(`${label}: n=${d.n}` + (d.n ? `, p50 ${fmt(d.p50)}, p99 ${fmt(d.p99)}` : "")),
        xaxis: {title: {text: label}}, yaxis: countAxis(d.hist_y),
        // quartiles, not ticks aligned to the count axis' grid (0.211, 0.422, ...)
        yaxis2: {overlaying: "y", side: "right", range: [0, 1.02], tickmode: "array",
                 tickvals: [0, 0.25, 0.5, 0.75, 1], ticktext: ["0", "0.25", "0.5", "0.75", "1"],
                 showgrid: false, title: {text: "CDF"}},
        showlegend: false, margin: {t: 40, r: 50, b: 40, l: 50}}, CONFIG);
  }
}

function overTime() {
  const o = D.over_time;
  Plotly.newPlot("over-time", [
    {type: "scatter", mode: "lines", name: "output tok/s", x: o.t, y: o.tput, line: {shape: "hv"}},
    {type: "scatter", mode: "lines", name: "in flight", x: o.t, y: o.inflight, yaxis: "y2",
     line: {shape: "hv", color: "#ff7f0e"}},
  ], {xaxis: {title: {text: "s since measured start (shaded: warmup)"}},
      yaxis: {title: {text: "output tokens/s"}},
      // its own ticks (whole requests), not ones synced to the left axis' grid (0.86, 1.73)
      yaxis2: {overlaying: "y", side: "right", title: {text: "requests in flight"},
               tickmode: "auto", rangemode: "tozero", tickformat: "d", showgrid: false},
      shapes: markShapes(t0Min()), margin: {t: 20, r: 60, b: 50, l: 60}}, CONFIG);
}

function series() {
  // One chart per quantity family, each with its unit; counters drawn as rates
  // (harness/publish/dashboards/series_view.py).
  const note = document.getElementById("series-note");
  const n = D.series.reduce((a, f) => a + f.traces.length, 0);
  note.textContent = n
    ? `${n} traces from ${D.series_source}, in ${D.series.length} charts (counters as rates per second)`
    : "no time series sampled for this point";
  const zero = D.series_zero || [];
  if (zero.length) note.textContent += `; zero throughout, not drawn: ${zero.join(", ")}`;
  const box = document.getElementById("series");
  for (const f of D.series) {
    const div = el("div", {class: "chart", id: "series-" + f.key});
    box.appendChild(div);
    const traces = f.traces.map(s => ({type: "scatter", mode: "lines", x: s.t, y: s.v,
      name: s.name, line: {shape: "hv"}}));
    Plotly.newPlot(div, traces, {title: TITLE(f.title),
      xaxis: {title: {text: "s since measured start (shaded: warmup)"}},
      yaxis: {title: {text: f.unit}},
      shapes: markShapes(t0Min()), legend: {orientation: "h", y: -0.3},
      margin: {t: 40, r: 20, b: 60, l: 60}}, CONFIG);
  }
}

function timeline() {
  const tl = D.timeline;  // columnar: one entry per request
  const n = tl.send.length;
  const seg = (from, to, name, color, width) => {
    const xs = [], ys = [], text = [];
    for (let i = 0; i < n; i++) {
      const a = from[i], z = to[i];
      if (a === null || z === null || z < a) continue;
      xs.push(a, z, null); ys.push(tl.row[i], tl.row[i], null);
      const t = `${tl.id[i]} · ${tl.phase[i]}` + (tl.subagent[i] ? ` · ${tl.subagent[i]}` : "");
      text.push(t, t, null);
    }
    return {type: "scatter", mode: "lines", name, x: xs, y: ys, text, hoverinfo: "text+x",
      line: {color, width}};
  };
  const traces = [
    seg(tl.wait_from, tl.send, "wait since the row's last request", "#999999", 2),
    seg(tl.send, tl.first, "waiting for first token", "#ff7f0e", 8),
    seg(tl.first, tl.end, "decoding", "#1f77b4", 8),
  ];
  const sends = tl.send.filter(v => v !== null);
  Plotly.newPlot("timeline", traces, {
    xaxis: {title: {text: "s since measured start (shaded: warmup)"}},
    yaxis: {tickvals: tl.rows.map((_, i) => i), ticktext: tl.rows, autorange: "reversed"},
    shapes: [warmupShape(Math.min(0, ...sends))],
    legend: {orientation: "h", y: -0.2}, margin: {t: 20, r: 20, b: 60, l: 140},
    height: Math.max(300, 40 * tl.rows.length + 120)}, CONFIG);
}

// Speculative acceptance: per request where the reply carried draft counts, else the
// point's aggregate from the engine's counters, labelled as such; and why (step cost).
function speculation() {
  const title = document.getElementById("spec-title");
  if (!P.point.spec_method || P.point.spec_method === "none") {
    title.hidden = true;
    return;
  }
  document.getElementById("spec-why").textContent = "Why: " + (P.point.spec_why || "no step cost");
  const note = document.getElementById("spec-note");
  const R = D.spec_requests;
  const agg = P.point.spec_realised_al;
  const aggText = agg === undefined || agg === null ? "no aggregate AL recorded" : `aggregate AL ${fmt(agg)} over the point (engine counters: ${fmt(P.point.spec_accepted_tokens)} accepted of ${fmt(P.point.spec_draft_tokens)} drafted tokens in ${fmt(P.point.spec_drafts)} drafts)`;
  if (!R) {
    note.textContent = `Per-request acceptance: not reported by this engine's replies; ${aggText}. Accepted drafts per step: not reported (per-step counts need the engine's per-step log).`;
    return;
  }
  note.textContent = `Per request, from the server's replies (llama.cpp timings.draft_n / draft_n_accepted), ${R.n} requests; ${aggText}. Accepted drafts per step: not reported (llama.cpp gives per-request totals only).`;
  const box = document.getElementById("spec-dists");
  for (const [k, label] of [["tokens_per_step", "tokens per decode step (per-request AL)"], ["accept_rate", "accepted / drafted tokens"]]) {
    const d = R[k];
    const div = el("div", {class: "chart", id: "spec-dist-" + k});
    box.appendChild(div);
    Plotly.newPlot(div, [{type: "bar", x: d.hist_x, y: d.hist_y, width: d.hist_width, marker: {color: "#2ca02c"}}],
      {title: TITLE(`${label}: n=${d.n}` + (d.n ? `, p50 ${fmt(d.p50)}` : "")),
       xaxis: {title: {text: label}}, yaxis: countAxis(d.hist_y), showlegend: false,
       margin: {t: 40, r: 20, b: 40, l: 50}}, CONFIG);
  }
}

const SLO_NAMES = {ttft: "TTFT", tpot: "TPOT", e2el: "E2E latency"};

function sloChart() {
  // each measured request's TTFT against its TPOT, coloured by whether it met every SLO;
  // the bounds as lines (docs/slo.md)
  const S = D.slo;
  if (!S) return;
  document.getElementById("slo-title").hidden = false;
  const box = document.getElementById("slo");
  box.hidden = false;
  const n = S.good.length, good = S.good.filter(Boolean).length;
  const b = S.bounds;
  document.getElementById("slo-note").textContent =
    `${good} of ${n} measured requests met every SLO (` +
    Object.entries(b).map(([k, v]) => `${SLO_NAMES[k] || k} <= ${v} ms`).join(", ") + ")";
  const pick = want => S.good.map((g, i) => (g === want && !S.failed[i]) ? i : -1).filter(i => i >= 0);
  const trace = (idx, name, color) => ({type: "scatter", mode: "markers", name,
    x: idx.map(i => S.ttft[i]), y: idx.map(i => S.tpot[i]),
    text: idx.map(i => `E2EL ${fmt(S.e2el[i])} ms`), marker: {color, size: 6}});
  const shapes = [];
  if (b.ttft !== undefined) shapes.push({type: "line", xref: "x", yref: "paper", x0: b.ttft,
    x1: b.ttft, y0: 0, y1: 1, line: {dash: "dash", color: "#d62728"}});
  if (b.tpot !== undefined) shapes.push({type: "line", xref: "paper", yref: "y", x0: 0, x1: 1,
    y0: b.tpot, y1: b.tpot, line: {dash: "dash", color: "#d62728"}});
  Plotly.newPlot(box, [trace(pick(true), "met every SLO", "#2ca02c"),
                       trace(pick(false), "missed one", "#d62728")],
    {xaxis: {title: {text: "TTFT (ms)"}}, yaxis: {title: {text: "TPOT (ms)"}}, shapes,
     margin: {t: 20, r: 20, b: 50, l: 60}, legend: {orientation: "h", y: -0.2}}, CONFIG);
}

header();
validity();
if (D.has_requests) speculation();
else if (P.point.spec_method && P.point.spec_method !== "none") {
  document.getElementById("spec-note").textContent = "a published row: no per-request or counter data";
}
if (D.has_requests) {
  distributions();
  sloChart();
  overTime();
  series();
  if (P.point.has_sessions || D.timeline.rows.length > 1) timeline();
  else {  // one row of requests says nothing a fixed point's over-time chart does not
    document.getElementById("timeline-title").hidden = true;
    document.getElementById("timeline").hidden = true;
  }
} else {
  for (const id of ["dists", "over-time", "series", "timeline"]) {
    document.getElementById(id).textContent = "no request records for this point (a published row: its numbers only)";
  }
}
