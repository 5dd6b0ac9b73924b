"""Screenshots of the dashboard's four views and three point pages, and each page's visible
text beside it (.txt), from a directory holding dash.html and dash_points/ (README.md here).

Usage: python docs/screenshots/shoot.py DASH_DIR OUT_DIR
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

SCENARIO = "fixed-128x64"
VIEWS = ("frontier", "compare", "trend", "speculation")
PAGES = {  # the point ids of results/20261207-152106 and the multi-node demo's agentic point
    "point-fixed-plain-c2": "20261207-152106/c2-r0-1a19b2326d38.html",
    "point-fixed-ngram-c2": "20261207-152106/c2-ngram-k4-r0-bd116f0ffbf8.html",
    "point-agentic-c8": "multinode-demo-20261207-185555/c8-r0-51093958a5a1.html",
}
SETTLE_MS = 2500  # plotly draws after load; the pages have no single ready signal


def main(src: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=["--no-sandbox", "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.on("pageerror", lambda e: errors.append(str(e)))
        shots = [(f"dashboard-{v}", f"{(src / 'dash.html').as_uri()}#view={v}&scenario={SCENARIO}",
                  True) for v in VIEWS]
        shots += [(name, (src / "dash_points" / rel).as_uri(), False)
                  for name, rel in PAGES.items()]
        for name, url, whole in shots:
            if not whole:  # point pages are long: their first 1500 px, under 300 KB each
                tab.set_viewport_size({"width": 1280, "height": 1500})
            tab.goto(url)
            tab.wait_for_timeout(SETTLE_MS)
            tab.screenshot(path=str(out / f"{name}.png"), full_page=whole)
            (out / f"{name}.txt").write_text(tab.inner_text("body"))
        browser.close()
    if errors:
        sys.exit(f"page errors: {errors}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
