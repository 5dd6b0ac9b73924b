// Shared by the dashboard (dashboard.js) and the point pages (point.js): elements built
// from data, with the one guard on the links they carry.

// A link from data (an ingested row's run_url, a config, a trace) is http(s) or relative, or
// no link at all: a script URL (or any other scheme) would run or open something on click.
function safeHref(v) {
  const s = String(v);
  return /^https?:\/\//i.test(s) || !/^[^/?#]*:/.test(s);
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if ((k === "href" || k === "src") && !safeHref(v)) continue;
    e.setAttribute(k, v);
  }
  if (text !== undefined) e.textContent = text;
  return e;
}
