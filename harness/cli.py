"""The `harness` command: sweep (Hydra), dashboard, and the tools around results."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.config.errors import ConfigError
from harness.config.groups import check_group_choices
from harness.workloads.traces.model import TraceError

USAGE = """harness <command> [options]

commands:
  sweep       run a benchmark sweep (Hydra: `harness sweep --help` lists groups and overrides)
  dashboard   write a self-contained HTML dashboard from run directories
  traces      inspect trace files (`harness traces stats FILE...`)
"""


def _sweep(argv: list[str]) -> int:
    from harness import sweep_app

    check_group_choices(argv)  # an unknown choice fails here with the options listed
    if not any(a.split("=", 1)[0].lstrip("+") == "run_id" for a in argv) and "--help" not in argv \
            and "-h" not in argv:
        argv = [*argv, f"run_id={time.strftime('%Y%m%d-%H%M%S')}"]
    sweep_app.main(argv)
    return 0


def _dashboard(argv: list[str]) -> int:
    from harness.dashboards.page import write_dashboard

    p = argparse.ArgumentParser(prog="harness dashboard",
                                description="Write a self-contained offline HTML dashboard.")
    p.add_argument("runs", nargs="+", type=Path, help="run directories (results/<run_id>)")
    p.add_argument("--out", type=Path, default=Path("dashboards/latest.html"))
    p.add_argument("--title", default="harness: throughput per GPU vs interactivity")
    a = p.parse_args(argv)
    path = write_dashboard(a.runs, a.out, a.title)
    print(f"dashboard: {path}")
    return 0


def _traces(argv: list[str]) -> int:
    from harness.workloads.traces import FORMATS, load_traces
    from harness.workloads.traces.stats import format_stats, trace_stats

    p = argparse.ArgumentParser(prog="harness traces", description="Inspect trace files.")
    sub = p.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("stats", help="requests, sessions, sub-agents, ISL/OSL, think times, "
                                      "theoretical prefix-hit rate")
    st.add_argument("files", nargs="+", type=Path)
    st.add_argument("--format", choices=sorted(FORMATS), default=None,
                    help="default: detected from the file")
    a = p.parse_args(argv)
    for f in a.files:
        print(format_stats(trace_stats(load_traces(f, a.format)), str(f)))
    return 0


COMMANDS = {"sweep": _sweep, "dashboard": _dashboard, "traces": _traces}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    cmd = COMMANDS.get(argv[0])
    if cmd is None:
        print(f"harness: unknown command {argv[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return cmd(argv[1:])
    except (ConfigError, TraceError) as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:
        return int(e.code) if isinstance(e.code, int) else (0 if e.code is None else 1)


if __name__ == "__main__":
    sys.exit(main())
