// Speculation view of the dashboard: each speculative series against its plain match
// (harness/publish/speedup.py, computed when the page was written): the interactivity ratio
// over load with the break-even line, then the tables - crossover, equal interactivity, best
// k, speedup against AL, step cost. Text via textContent only.
"use strict";

const SPEC_TABLES = [
  ["crossover", "Crossover load (ratio falls below 1)", ["base", "speculator", "crossover_conc", "tput_crossover_conc"]],
  ["equal_concurrency", "Speedup at equal concurrency", ["base", "speculator", "conc", "repeats", "plain_match", "spec_intvty", "plain_intvty", "intvty_ratio", "tput_ratio", "interval", "realised_al"]],
  ["equal_interactivity", "Speedup at equal interactivity (along the frontiers)", ["base", "speculator", "target_intvty", "spec_tput", "plain_tput", "tput_ratio", "interval"]],
  ["best_k_by_load", "Best k per load", ["base", "method", "mode", "conc", "best", "runner_up", "margin", "values"]],
  ["best_k_by_target", "Best k per interactivity target", ["base", "method", "mode", "target_intvty", "best", "runner_up", "margin", "values"]],
  ["al_map", "Speedup against injected AL", ["base", "method", "k", "conc", "ratios", "realised", "break_even_al", "note"]],
  ["cost", "Why: step cost from the engine's counters", ["base", "speculator", "conc", "drafts_per_step", "drafted_share", "accept_rate", "tokens_per_step", "verify_cost_plain_steps", "cost_plain_steps", "speedup", "why"]],
];

// Column headings a reader reads (the row keys are harness/publish/spec_report.py's).
const SPEC_HEADS = {base: "plain series", speculator: "speculator", crossover_conc: "crossover concurrency (interactivity)",
  tput_crossover_conc: "crossover concurrency (throughput)", conc: "concurrency", repeats: "repeats (spec/plain)",
  plain_match: "plain at this load", spec_intvty: "interactivity, speculative (tok/s/user)",
  plain_intvty: "interactivity, plain (tok/s/user)", intvty_ratio: "interactivity speedup (x)",
  tput_ratio: "throughput speedup (x)", realised_al: "realised AL", target_intvty: "target interactivity (tok/s/user)",
  spec_tput: "tok/s/GPU, speculative", plain_tput: "tok/s/GPU, plain", method: "method", mode: "acceptance",
  best: "best", runner_up: "runner-up", margin: "margin", values: "values", k: "k",
  ratios: "interactivity speedup by injected AL", realised: "realised AL by injected AL",
  break_even_al: "break-even AL", note: "note", drafts_per_step: "drafts per step",
  drafted_share: "drafted share", accept_rate: "accept rate", tokens_per_step: "tokens per step",
  verify_cost_plain_steps: "verify cost (plain steps)", cost_plain_steps: "step cost (plain steps)",
  speedup: "speedup (x)", why: "why", interval: "interval"};

// The ratio rows' interval column starts so when a side was measured once (speedup.NO_INTERVAL)
const NO_INTERVAL = "none: one repeat";

// One sentence when ratios in this scenario come from a single repeat (spec_report's
// one_repeat_note says the same in `harness speculation`).
function oneRepeatNote(S, scen) {
  const rows = ["equal_concurrency", "equal_interactivity"].flatMap(k => (S[k] || []).filter(r => inScenario(r, scen)));
  const once = rows.filter(r => String(r.interval || "").startsWith(NO_INTERVAL));
  if (!once.length) return null;
  const every = once.length === rows.length;
  return `${every ? "Every" : "Some"} comparison below comes from one repeat (${once.length} of ${rows.length} ratio rows): ` +
    `${every ? "its" : "those"} ratios and crossovers have no interval, so a ratio near 1 is not evidence either way. ` +
    "Measure with repeats=3 (or more) for mean ± one standard error.";
}

function specCell(row, col) {
  const v = row[col];
  if (v === null || v === undefined) return "–";
  if (typeof v === "object") return Object.entries(v).map(([k, x]) => `${k}: ${typeof x === "number" ? x.toPrecision(3) : "–"}`).join(", ");
  if (typeof v === "number") {
    if (Number.isInteger(v) && (col === "conc" || col === "k")) return String(v);
    if (col === "margin") return (100 * v).toFixed(1) + "%";
    const se = row[col + "_se"];
    return v.toPrecision(3) + (typeof se === "number" ? ` ± ${se.toPrecision(2)}` : "");
  }
  return String(v);
}

// The plain series a speculative point is matched with (harness/publish/speedup.py base_key)
function matchBase(p) { return [p.model, p.chip, p.engine, p.precision, p.scenario].join("|"); }

function isPlain(p) { return !p.spec_name || p.spec_name === "none"; }

// Whether a speculative series and its plain match are both in `pts`
function hasMatch(pts) {
  const plain = new Set(pts.filter(isPlain).map(matchBase));
  return pts.some(p => !isPlain(p) && plain.has(matchBase(p)));
}

// Why the view has no speedup to show: no matching pair at all, or pairs whose points are all
// invalid (the speedups count valid points only, as `harness speculation` does without
// --include-invalid)
function noSpeedupText(scen) {
  const ours = DATA.points.filter(p => p.scenario === scen && !p.published);
  if (hasMatch(ours) && !hasMatch(ours.filter(p => p.valid))) {
    const plain = ours.filter(isPlain), spec = ours.filter(p => !isPlain(p));
    const bad = side => `${side.filter(p => !p.valid).length} of ${side.length}`;
    return `No speedup to show: the matching points in this scenario are invalid (plain ${bad(plain)}, ` +
      `speculative ${bad(spec)}; each point's page says which rule failed). ` +
      "`harness speculation --include-invalid <run>` counts them, its rows marked valid NO; " +
      "for exploration only, never for published figures.";
  }
  return "No speculative series with a matching plain series (same model, chip, engine, precision, scenario) in this scenario.";
}

// what a load counts in this scenario (its points' workload traits): requests or session trees
function loadTitle(scen) {
  const means = (DATA.points.find(p => p.scenario === scen) || {}).load_means || "concurrent requests";
  return `concurrency (${means === "concurrent requests" ? "requests in flight" : means})`;
}

function loadTicks(rows) { return [...new Set(rows.map(r => r.conc))].sort((a, b) => a - b); }

function inScenario(row, scen) { return String(row.base || "").includes(` · ${scen}`); }

function renderSpeculation(scen) {
  const S = DATA.speculation || {};
  const rows = (S.equal_concurrency || []).filter(r => inScenario(r, scen));
  const traces = [];
  const groups = new Map();
  for (const r of rows) {
    const key = `${r.base} · ${r.speculator}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  let i = 0;
  for (const [name, rs] of groups) {
    rs.sort((a, b) => a.conc - b.conc);
    traces.push({type: "scatter", mode: "lines+markers", name, x: rs.map(r => r.conc),
      y: rs.map(r => r.intvty_ratio), line: {color: DATA.palette[i++ % DATA.palette.length]},
      error_y: {type: "data", array: rs.map(r => r.intvty_ratio_se || 0), visible: rs.some(r => r.intvty_ratio_se)}});
  }
  // no rows: no chart (an empty one draws axes over nothing); the text below says why
  const chart = document.getElementById("spec-chart");
  chart.hidden = !rows.length;
  if (!rows.length) Plotly.purge(chart);
  else Plotly.react("spec-chart", traces, {
    title: {text: "Interactivity, speculative / plain, at equal concurrency"},
    // log, as the capacity chart's load axis (loads double), ticked at the loads measured:
    // plotly's own ticks on a short log range (2, 2.2, 2.4, ...) read as a linear axis
    xaxis: {title: {text: loadTitle(scen)}, type: "log", tickvals: loadTicks(rows)},
    yaxis: {title: {text: "speedup (x)"}}, showlegend: true,
    shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {dash: "dot", color: "#888"}}],
    legend: {orientation: "h", y: -0.25}, margin: {t: 60, r: 20, b: 120, l: 80},
  }, PLOT_CONFIG);
  renderAlChart(scen);
  const box = document.getElementById("spec-tables");
  box.replaceChildren();
  if (!rows.length) box.appendChild(el("p", {id: "spec-empty"}, noSpeedupText(scen)));
  const once = oneRepeatNote(S, scen);
  if (once) box.appendChild(el("p", {id: "spec-one-repeat", class: "invalid"}, once));
  for (const [key, title, cols] of SPEC_TABLES) {
    const tr = (S[key] || []).filter(r => inScenario(r, scen));
    if (!tr.length) continue;
    box.appendChild(el("h3", {}, title));
    const table = el("table", {class: "spec-table", "data-table": key});
    const head = el("tr");
    for (const c of cols) head.appendChild(el("th", {"data-col": c}, SPEC_HEADS[c] || c.replace(/_/g, " ")));
    table.appendChild(head);
    for (const r of tr) {
      const row = el("tr");
      for (const c of cols) row.appendChild(el("td", {"data-col": c}, specCell(r, c)));
      table.appendChild(row);
    }
    box.appendChild(table);
  }
}

// Speedup against acceptance length: per family (method, k) and load, the interactivity ratio
// to plain at each injected AL (spec_report's al_map rows), the break-even line at 1.
function renderAlChart(scen) {
  const rows = ((DATA.speculation || {}).al_map || []).filter(r => inScenario(r, scen));
  const div = document.getElementById("spec-al-chart");
  if (!rows.length) { Plotly.purge(div); div.hidden = true; return; }
  div.hidden = false;
  const traces = rows.map((r, i) => {
    // keys are the ALs as Python wrote them ("2.0"): keep each key with its number
    const als = Object.keys(r.ratios).map(k => [Number(k), k]).sort((a, b) => a[0] - b[0]);
    return {type: "scatter", mode: "lines+markers", name: `${r.method} k=${r.k} · concurrency ${r.conc}`,
      x: als.map(a => a[0]), y: als.map(a => (finite(r.ratios[a[1]]) ? r.ratios[a[1]] : null)),
      text: als.map(a => `realised AL ${specCell({v: (r.realised || {})[a[1]]}, "v")}`),
      line: {color: DATA.palette[i % DATA.palette.length]}};
  });
  Plotly.react(div, traces, {
    title: {text: "Interactivity speedup against acceptance length (injected)"},
    xaxis: {title: {text: "acceptance length, injected (tokens per step)"}},
    yaxis: {title: {text: "speedup (x)"}}, showlegend: true,
    shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {dash: "dot", color: "#888"}}],
    legend: {orientation: "h", y: -0.25}, margin: {t: 60, r: 20, b: 120, l: 80},
  }, PLOT_CONFIG);
}
