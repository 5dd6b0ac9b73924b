"""Screenshots of the dashboard's four views and three point pages, and each page's visible
text beside it (.txt), from a directory holding dash.html and dash_points/ (README.md here).

The pages are found by reading the dashboard's own points (its `harness-data` JSON), never by
id: the plain fixed-sequence point at concurrency 2, the n-gram one at concurrency 2, and an
agentic point (valid first, plain first, most session trees), each the newest such point. The
views are shot on the plain point's scenario; the speculation view also on the agentic
scenario (its speedup-against-AL chart needs injected points, which run there).

Usage: python docs/screenshots/shoot.py DASH_DIR OUT_DIR
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

VIEWS = ("frontier", "compare", "trend", "speculation")
SETTLE_MS = 2500  # plotly draws after load; the pages have no single ready signal
DATA = re.compile(r'<script type="application/json" id="harness-data">(.*?)</script>', re.S)


class NoSuchPoint(SystemExit):
    pass


def dashboard_points(dash: Path) -> list[dict[str, Any]]:
    """The points the dashboard carries (page.py writes them as JSON inside the page)."""
    found = DATA.search(dash.read_text())
    if not found:
        raise NoSuchPoint(f"{dash}: no harness-data JSON; is it a `harness dashboard` page?")
    return json.loads(found.group(1))["points"]


def _pick(points: list[dict[str, Any]], what: str, ok) -> dict[str, Any]:
    """The newest valid point that `ok` accepts (an invalid one only where none is valid)."""
    mine = [p for p in points if not p.get("published") and p.get("page") and ok(p)]
    if not mine:
        raise NoSuchPoint(f"no {what} among the dashboard's points; run `make run` first")
    return max(mine, key=lambda p: (bool(p.get("valid")), str(p.get("date") or "")))


def choose_pages(points: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Screenshot name -> the point it shows."""
    def fixed(p: dict[str, Any]) -> bool:
        return p.get("scenario_kind") == "fixed" and p.get("rate") is None

    plain = _pick(points, "plain fixed-sequence point at concurrency 2",
                  lambda p: fixed(p) and p.get("spec_name") == "none" and p.get("conc") == 2)
    ngram = _pick(points, "n-gram fixed-sequence point at concurrency 2",
                  lambda p: fixed(p) and p.get("spec_name") == "ngram" and p.get("conc") == 2
                  and p.get("scenario") == plain.get("scenario"))
    agentic = [p for p in points if p.get("scenario_kind") == "agentic" and p.get("page")
               and not p.get("published")]
    if not agentic:
        raise NoSuchPoint("no agentic point among the dashboard's points; run `make run` first")
    ag = max(agentic, key=lambda p: (bool(p.get("valid")), p.get("spec_name") == "none",
                                     p.get("conc") or 0, str(p.get("date") or "")))
    return {f"point-fixed-plain-c{plain['conc']}": plain,
            f"point-fixed-ngram-c{ngram['conc']}": ngram,
            f"point-agentic-{'plain' if ag.get('spec_name') == 'none' else ag.get('spec_name')}"
            f"-c{ag['conc']}": ag}


def shots(src: Path) -> list[tuple[str, str, bool]]:
    """(name, address, whole page?) of each screenshot."""
    dash = src / "dash.html"
    pages = choose_pages(dashboard_points(dash))
    fixed_scen = next(iter(pages.values()))["scenario"]
    agentic_scen = list(pages.values())[2]["scenario"]
    out = [(f"dashboard-{v}", f"{dash.as_uri()}#view={v}&scenario={fixed_scen}", True)
           for v in VIEWS]
    out.append(("dashboard-speculation-agentic",
                f"{dash.as_uri()}#view=speculation&scenario={agentic_scen}", True))
    out += [(name, (src / p["page"]).as_uri(), False) for name, p in pages.items()]
    return out


def main(src: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    todo = shots(src)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=["--no-sandbox", "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.on("pageerror", lambda e: errors.append(str(e)))
        for name, url, whole in todo:
            if not whole:  # point pages are long: their first 1500 px, under 300 KB each
                tab.set_viewport_size({"width": 1280, "height": 1500})
            tab.goto(url)
            tab.wait_for_timeout(SETTLE_MS)
            tab.screenshot(path=str(out / f"{name}.png"), full_page=whole)
            (out / f"{name}.txt").write_text(f"{url}\n\n{tab.inner_text('body')}")
            print(f"{name}: {url}")
        browser.close()
    if errors:
        sys.exit(f"page errors: {errors}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
