"""`harness speculation RUN...`: where speculation pays (harness/publish/speedup.py): speedup
over the matching plain series at equal concurrency and equal interactivity, the crossover
load, the best k per load and target, speedup against injected AL, and the cost side."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.cli.parser import Parser


def main(argv: list[str]) -> int:
    from harness.publish.spec_report import build, to_csv, to_markdown
    from harness.record.point_load import load_flat

    p = Parser(
        prog="harness speculation",
        description="Speculative series against their plain match (same model, chip, engine, "
                    "precision, scenario): ratios at equal concurrency and along the "
                    "frontiers, crossover load, best k, break-even AL, step costs. Valid "
                    "points only, unless --include-invalid.")
    p.add_argument("runs", nargs="+", type=Path, help="run directories (results/<run_id>)")
    p.add_argument("--targets", type=float, nargs="+", default=[],
                   help="interactivity targets (tok/s/user); default: 4 spread over the "
                        "range both frontiers cover")
    p.add_argument("--include-invalid", action="store_true",
                   help="also count points a validity rule flagged (their rows say valid NO); "
                        "for a busy machine's exploratory runs, never for published figures")
    p.add_argument("--csv", type=Path, help="also write every table to this CSV file")
    p.add_argument("--md", "--markdown", dest="md", type=Path,
                   help="also write the Markdown here (e.g. $GITHUB_STEP_SUMMARY)")
    a = p.parse_args(argv)
    try:
        points = load_flat(a.runs)
    except (FileNotFoundError, ValueError) as e:
        print(f"harness speculation: {e}", file=sys.stderr)
        return 2
    tables = build(points, a.targets, a.include_invalid)
    md = to_markdown(tables)
    empty = not any(tables.values())
    if empty and not a.include_invalid and any(build(points, a.targets, True).values()):
        md += ("(points a validity rule flagged were left out; --include-invalid counts "
               "them, marked valid NO)\n")
    print(md)
    if a.csv:
        a.csv.write_text(to_csv(tables))
    if a.md:
        a.md.write_text(md)
    return 0
