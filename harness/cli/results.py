"""The `harness` commands that read results: dashboard, gate, table, metrics, baseline,
export. `harness.cli.main` dispatches to them; this module holds their arguments."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.parser import Parser


def _dashboard(argv: list[str]) -> int:
    from harness.publish.dashboards.page import write_dashboard

    p = Parser(prog="harness dashboard",
                                description="Write a self-contained offline HTML dashboard.")
    p.add_argument("runs", nargs="+", type=Path, help="run directories (results/<run_id>)")
    p.add_argument("--out", type=Path, default=Path("dashboards/latest.html"))
    p.add_argument("--title", default="harness dashboard")  # each chart titles its own axes
    p.add_argument("--png", type=Path, help="also export one view as PNG (kaleido + Chromium)")
    p.add_argument("--svg", type=Path, help="also export one view as SVG")
    p.add_argument("--scenario", help="the view's scenario (default: the one with most points)")
    p.add_argument("--x", default="median_intvty", help="the view's x axis key")
    p.add_argument("--y", default="tput_per_gpu", help="the view's y axis key")
    p.add_argument("--optimal-only", action="store_true", help="the view shows frontiers only")
    p.add_argument("--no-point-pages", action="store_true",
                   help="skip the page per point (<out stem>_points/ beside the dashboard)")
    a = p.parse_args(argv)
    if a.out.parent.exists() and not a.out.parent.is_dir():  # name --out, not a page under it
        raise NotADirectoryError(20, "Not a directory", str(a.out))
    path = write_dashboard(a.runs, a.out, a.title, point_pages=not a.no_point_pages)
    print(f"dashboard: {path}")
    if not a.no_point_pages:
        print(f"point pages: {path.with_name(path.stem + '_points')}/")
    if a.png or a.svg:
        from harness.publish.dashboards.figure import build_figure, export_image
        from harness.publish.dashboards.page import load_points

        fig = build_figure(load_points(a.runs), a.scenario, a.x, a.y, a.optimal_only, a.title)
        for out in (a.png, a.svg):
            if out:
                print(f"image: {export_image(fig, out)}")
    return 0


def _readable(run_dirs: list[Path]) -> list:
    """The points of these runs; a ValueError when not one line could be read (each skipped
    line was named in a warning as it was read: points_file.read_points)."""
    from harness.record.point_load import load_records

    records = load_records(run_dirs)
    if not records:
        files = ", ".join(str(d / "points.jsonl") for d in run_dirs)
        raise ValueError(f"no readable point in {files} (any line skipped is named above); "
                         "give run directories with measured points (results/<run_id>)")
    return records


def _key_value(text: str) -> tuple[str, str]:
    from harness.record.point_record import IDENTITY_FIELDS

    key, sep, value = text.partition("=")
    if not sep or key not in IDENTITY_FIELDS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected FIELD=VALUE with FIELD one of {', '.join(IDENTITY_FIELDS)}")
    return key, value


def _gate(argv: list[str]) -> int:
    import json as _json

    from harness.publish.gate import DEFAULT_METRICS, gate, to_json, to_markdown
    from harness.record.metrics import ranked_metrics

    p = Parser(
        prog="harness gate",
        description="Compare a candidate run with a baseline. Exit 0 pass, 1 regression or "
                    "baseline points missing from the candidate, 2 invalid or not comparable.")
    p.add_argument("--baseline", type=Path, required=True, nargs="+")
    p.add_argument("--candidate", type=Path, required=True, nargs="+")
    p.add_argument("--threshold", type=float, default=0.05, help="relative change (0.05 = 5%%)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (repeats)")
    p.add_argument("--metric", nargs="+", default=list(DEFAULT_METRICS),
                   choices=ranked_metrics(), metavar="METRIC",
                   help="metrics to compare (any catalogue key with a direction)")
    p.add_argument("--only", nargs="+", type=_key_value, default=[], metavar="FIELD=VALUE",
                   help="compare only the points with these identity values, e.g. conc=8 "
                        "scenario=fixed-1k1k (every other baseline point must be matched)")
    p.add_argument("--markdown", type=Path, help="write the summary here (e.g. "
                                                 "$GITHUB_STEP_SUMMARY)")
    p.add_argument("--json", type=Path, help="write the full report here")
    a = p.parse_args(argv)
    try:
        base, cand = _readable(a.baseline), _readable(a.candidate)
    except (FileNotFoundError, ValueError) as e:
        print(f"harness gate: {e}", file=sys.stderr)
        return 2
    rep = gate(base, cand, a.metric, a.threshold, a.alpha, dict(a.only))
    md = to_markdown(rep, " ".join(map(str, a.baseline)), " ".join(map(str, a.candidate)))
    print(md)
    if a.markdown:
        with a.markdown.open("a") as f:
            f.write(md)
    if a.json:
        a.json.write_text(_json.dumps(to_json(rep), indent=1, allow_nan=True))
    return rep.exit_code


def _table(argv: list[str]) -> int:
    from harness.publish.tables import frontier_table, to_csv, to_markdown
    from harness.record.metrics import ranked_metrics

    p = Parser(prog="harness table",
                                description="Throughput at interactivity targets, read off "
                                            "each frontier (monotone, never extrapolated; "
                                            "directions from the metric catalogue).")
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--targets", type=float, nargs="+", required=True)
    p.add_argument("--x", default="median_intvty", choices=ranked_metrics(), metavar="METRIC")
    p.add_argument("--y", default="tput_per_gpu", choices=ranked_metrics(), metavar="METRIC")
    p.add_argument("--csv", type=Path)
    p.add_argument("--markdown", type=Path)
    a = p.parse_args(argv)
    try:
        records = _readable(a.runs)
    except (FileNotFoundError, ValueError) as e:
        print(f"harness table: {e}", file=sys.stderr)
        return 2
    rows = frontier_table(records, a.targets, a.x, a.y)
    md = to_markdown(rows)
    print(md)
    if a.csv:
        a.csv.write_text(to_csv(rows))
    if a.markdown:
        a.markdown.write_text(md)
    return 0


def _metrics(argv: list[str]) -> int:
    from harness.record.metrics import CATALOGUE, catalogue_markdown

    p = Parser(prog="harness metrics",
                                description="The metric catalogue (docs/metrics.md).")
    p.add_argument("keys", nargs="*", help="show only these keys")
    a = p.parse_args(argv)
    if not a.keys:
        print(catalogue_markdown())
        return 0
    for k in a.keys:
        m = CATALOGUE.get(k)
        if m is None:
            print(f"harness metrics: unknown key {k!r}; {_closest_keys(k, list(CATALOGUE))}",
                  file=sys.stderr)
            return 2
        print(f"{m.key}: {m.label} [{m.unit}, {m.direction} is better] {m.definition}")
    return 0


def _closest_keys(key: str, keys: list[str]) -> str:
    """The fix for a misspelt metric key: the closest catalogue keys (spelling, then keys that
    contain it: `tput` -> `tput_per_gpu`), else where they are listed."""
    import difflib

    by_lower = {k.lower(): k for k in keys}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=3, cutoff=0.6)
    close = close or sorted((k for k in by_lower if key.lower() in k), key=len)[:3]
    if not close:  # the same words in another order: `ttft_p99` -> `p99_ttft`
        def words(k: str) -> str:
            return "_".join(sorted(k.replace("-", "_").split("_")))

        by_words = {words(k): k for k in by_lower}
        close = [by_words[c] for c in
                 difflib.get_close_matches(words(key.lower()), list(by_words), n=3, cutoff=0.8)]
    if close:
        return "did you mean " + " or ".join(repr(by_lower[c]) for c in close) + "?"
    return f"`harness metrics` lists all {len(keys)} keys"


def _baseline(argv: list[str]) -> int:
    import shutil

    p = Parser(prog="harness baseline",
                                description="Save a run's points as a committed baseline.")
    p.add_argument("run", type=Path)
    p.add_argument("--to", type=Path, required=True, help="e.g. results/baselines/<name>")
    a = p.parse_args(argv)
    if not (a.run / "points.jsonl").is_file():
        print(f"harness baseline: {a.run} has no points.jsonl", file=sys.stderr)
        return 2
    a.to.mkdir(parents=True, exist_ok=True)
    for name in ("points.jsonl", "run.json"):
        if (a.run / name).is_file():
            shutil.copy2(a.run / name, a.to / name)
    print(f"baseline saved: {a.to}")
    return 0


def _export(argv: list[str]) -> int:
    """InferenceX / AIPerf result files from a run directory (harness.publish.exports)."""
    from harness.cli.exports import main as export_main

    return export_main(argv)
