"""`harness export FORMAT RUN_DIR --out DIR`: the command line of harness.publish.exports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.parser import Parser

FORMATS = {"inferencex": "InferenceX client results (fixed-sequence) and AIPerf artifacts "
                         "(agentic), each with the environment of InferenceX's processing"}


def _parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="harness export",
        description="Write a run's points in another tool's formats, for its own "
                    "post-processing. Only valid points are exported (their pipeline has no "
                    "notion of validity); --include-invalid exports the others too, marked.")
    p.add_argument("format", choices=sorted(FORMATS),
                   help="; ".join(f"{k}: {v}" for k, v in FORMATS.items()))
    p.add_argument("run", type=Path, metavar="RUN_DIR", help="a run directory, results/<run_id>")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="where to write (created)")
    p.add_argument("--include-invalid", action="store_true",
                   help="export invalid points too, '_INVALID' appended to their result "
                        "name and harness_valid=false in their files")
    return p


def main(argv: list[str]) -> int:
    from harness.publish.exports import ExportError, export_inferencex
    from harness.record.results import ResultsWriteError

    a = _parser().parse_args(argv)
    try:
        res = export_inferencex(a.run, a.out, include_invalid=a.include_invalid)
    except ExportError as e:
        print(f"harness export: {e}", file=sys.stderr)
        return 2
    except ResultsWriteError as e:
        print(f"harness export: {e}", file=sys.stderr)
        return 4 if e.disk_fault else 2
    if res.left_out and not (res.fixed + res.agentic):
        # nothing to export: bad input for this command (README, exit codes), one line
        print(f"harness export: every point of {a.run} is invalid ({len(res.left_out)}), so "
              "nothing was exported; fix: see why in each point's invalid_reasons (`harness "
              "dashboard` shows them), or pass --include-invalid to export them marked "
              "_INVALID", file=sys.stderr)
        return 2
    for w in res.warnings:
        print(f"harness export: warning: {w}", file=sys.stderr)
    print(f"exported {res.fixed + res.agentic} points ({res.fixed} fixed-sequence, "
          f"{res.agentic} agentic) to {a.out}")
    if res.left_out:
        print(f"left out {len(res.left_out)} invalid point(s) (--include-invalid to export "
              "them, marked):")
        for why in res.left_out:
            print(f"  {why}")
    return 0
