// Frontiers and interpolation for the dashboard, the same rules as harness/publish/curves.py:
// frontiers from valid points only; interpolation at a target interactivity as InferenceX-app
// does it (vngcloud/InferenceX-app: packages/app/src/components/calculator/interpolation.ts
// @25305dc5ecc31c01df1a41159e8637e90dc50ef0): the (interactivity, throughput per GPU) frontier,
// then a monotone cubic Hermite spline with Steffen slopes (d3.curveMonotoneX) per metric.
"use strict";

const finite = v => typeof v === "number" && Number.isFinite(v);

// Pareto frontier of the valid points: points no other beats on both axes; x must be > 0.
// Invalid points stay on the chart (marked x) but never shape a frontier.
function frontier(pts, xk, yk, xHigher, yHigher) {
  const sx = xHigher ? 1 : -1, sy = yHigher ? 1 : -1;
  const cand = pts.filter(p => p.valid && finite(p[xk]) && finite(p[yk]) && p[xk] > 0);
  cand.sort((a, b) => (sx * b[xk] - sx * a[xk]) || (sy * b[yk] - sy * a[yk]));
  const keep = [];
  let best = -Infinity;
  for (const p of cand) if (sy * p[yk] > best) { keep.push(p); best = sy * p[yk]; }
  return keep.sort((a, b) => a[xk] - b[xk]);
}

// Upstream's paretoFrontUpperLeft on (x, throughput): same x keeps the higher y, then y falls.
function throughputFrontier(pts, xk, yk) {
  const cand = pts.filter(p => p.valid && finite(p[xk]) && finite(p[yk]) && p[xk] > 0);
  cand.sort((a, b) => (a[xk] - b[xk]) || (b[yk] - a[yk]));
  const front = [];
  for (const p of cand) {
    if (front.length && front[front.length - 1][xk] === p[xk]) continue;
    while (front.length && p[yk] >= front[front.length - 1][yk]) front.pop();
    front.push(p);
  }
  return front;
}

function steffenSlopes(xs, ys) {
  const n = xs.length;
  if (n < 2) return new Array(n).fill(0);
  const h = [], s = [];
  for (let i = 0; i < n - 1; i++) {
    h.push(xs[i + 1] - xs[i]);
    s.push(h[i] ? (ys[i + 1] - ys[i]) / h[i] : 0);
  }
  const sign = v => (v < 0 ? -1 : 1);
  const m = new Array(n).fill(0);
  for (let i = 1; i < n - 1; i++) {
    const p = (s[i - 1] * h[i] + s[i] * h[i - 1]) / (h[i - 1] + h[i]);
    m[i] = (sign(s[i - 1]) + sign(s[i])) * Math.min(Math.abs(s[i - 1]), Math.abs(s[i]), 0.5 * Math.abs(p)) || 0;
  }
  m[0] = h[0] ? (3 * s[0] - m[1]) / 2 : m[1];
  m[n - 1] = h[n - 2] ? (3 * s[n - 2] - m[n - 2]) / 2 : m[n - 2];
  return m;
}

function hermiteAt(xs, ys, m, t) {
  const n = xs.length;
  if (n === 1 || t <= xs[0]) return ys[0];
  if (t >= xs[n - 1]) return ys[n - 1];
  let lo = 0, hi = n - 1;
  while (lo < hi - 1) { const mid = (lo + hi) >> 1; if (xs[mid] <= t) lo = mid; else hi = mid; }
  const hh = xs[hi] - xs[lo], u = (t - xs[lo]) / hh, u2 = u * u, u3 = u2 * u;
  return (2 * u3 - 3 * u2 + 1) * ys[lo] + (u3 - 2 * u2 + u) * hh * m[lo]
    + (-2 * u3 + 3 * u2) * ys[hi] + (u3 - u2) * hh * m[hi];
}

// A monotone curve through frontier points for drawing (n samples per segment).
function monotone(xs, ys, n) {
  if (xs.length < 2) return [xs, ys];
  const m = steffenSlopes(xs, ys), ox = [], oy = [];
  for (let i = 0; i < xs.length - 1; i++) {
    for (let j = 0; j < n; j++) {
      const x = xs[i] + (j / n) * (xs[i + 1] - xs[i]);
      ox.push(x); oy.push(hermiteAt(xs, ys, m, x));
    }
  }
  ox.push(xs[xs.length - 1]); oy.push(ys[ys.length - 1]);
  return [ox, oy];
}

// Each metric at x = target along the throughput frontier. mode "clamp" (upstream's
// calculator): target and values clamped to the frontier's ranges; "none" (upstream's trends):
// null outside the range, a lone point only at its own x, values floored at 0.
function interpolateOnFrontier(pts, target, xk, metrics, mode) {
  const front = throughputFrontier(pts, xk, "tput_per_gpu");
  if (!front.length) return null;
  const xs = front.map(p => p[xk]);
  const inside = target >= xs[0] && target <= xs[xs.length - 1];
  if (mode === "none" && (!inside || (xs.length === 1 && Math.abs(target - xs[0]) > 1e-6))) return null;
  const t = Math.min(Math.max(target, xs[0]), xs[xs.length - 1]);
  const out = {target, clamped: !inside, frontier_points: xs.length, x_range: [xs[0], xs[xs.length - 1]]};
  for (const k of metrics) {
    const ys = front.map(p => p[k]);
    if (!ys.every(finite)) { out[k] = null; continue; }
    const v = hermiteAt(xs, ys, steffenSlopes(xs, ys), t);
    out[k] = mode === "clamp" ? Math.min(Math.max(v, Math.min(...ys)), Math.max(...ys)) : Math.max(0, v);
  }
  return out;
}

// InferenceX-app's canonical agentic frontier (vngcloud/InferenceX-app:
// packages/app/src/components/inference/utils/canonicalFrontier.ts@43fa9b2ca95c209d654d51b4936e0e862f0f1b50):
// winners on E2E-normalized interactivity per (series, precision, date); the chart's frontier
// on any x axis keeps only points on both its own frontier and this set.
function canonicalIds(pts, yk, yHigher, normKey) {
  const groups = new Map();
  for (const p of pts) {
    if (!p.valid || !finite(p[normKey]) || !finite(p[yk])) continue;
    const key = `${p.series}|${p.precision}|${p.date}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(p);
  }
  const ids = new Set();
  for (const g of groups.values()) for (const p of frontier(g, normKey, yk, true, yHigher)) ids.add(p.point_id);
  return ids;
}
