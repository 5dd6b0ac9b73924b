"""`harness catalog`: InferenceX's catalog read from a checkout of upstream (docs/catalog.md).

- `import DIR [--out recipes/recipe] [--report PATH]`: capture every single-node launch of both
  masters by running upstream's scripts with recording stand-ins; write the captures, one
  recipe per key and a Markdown report of every key not captured and why;
- `show KEY [--json]`: every launch of a shipped key;
- `diff OLD NEW`: what changed between two imports;
- `verify-e2e [--keys GLOB,...]`: every shipped single-node key, one point each, in attach mode
  against an emulator of its engine (router included), the injected AL verified; a table.
  It runs `python -m harness.testing.catalog_e2e` in a child process: the emulators are test
  instruments, the last layer of docs/architecture.md, which the CLI may not import, so it
  starts that module instead (every key still runs in that one child process)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from harness.cli.parser import Parser
from harness.config.locations import checkout_root, repo_root


def _import(a: argparse.Namespace) -> int:
    from harness.catalog.importer import ImportError_, import_checkout, write_recipes
    from harness.catalog.masters import MasterError
    from harness.catalog.report import render

    if a.out is None and checkout_root() is None:  # never write into the installed package
        print("harness catalog import: this harness is installed, not a checkout, so there is "
              "no recipes/recipe/ to write into; give --out DIR/recipe and select the keys "
              "with `harness sweep --config-dir DIR recipe=KEY`", file=sys.stderr)
        return 2
    out = a.out if a.out is not None else repo_root() / "recipes" / "recipe"
    if not a.dir.is_dir():
        print(f"harness catalog import: {a.dir} is not a directory (give a checkout of "
              f"SemiAnalysisAI/InferenceX)", file=sys.stderr)
        return 2
    try:
        state, results = import_checkout(a.dir, out, keys=a.keys.split(",") if a.keys else None,
                                         bound_s=a.bound_s, workers=a.workers,
                                         progress=lambda s: print(s, flush=True),
                                         capture=not a.no_capture)
    except (ImportError_, MasterError) as e:
        print(f"harness catalog import: {e}", file=sys.stderr)
        return 2
    for note in state.notes():
        print(f"note: {note}")
    n, missing = write_recipes(results, state.commit, out)
    print(f"{n} recipes written to {out}")
    for why in missing:  # nothing dropped silently: each key without a recipe, and why
        print(f"no recipe: {why}")
    report = a.report if a.report is not None else out / "captured" / "IMPORT_REPORT.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render(state, results, str(a.dir)))
    print(f"report: {report}")
    return 0


def _print_or_fail(name: str, render: Callable[[], str]) -> int:
    """Print what a catalog subcommand renders; a bad key or directory is one line, exit 2."""
    try:
        print(render())
    except (KeyError, ValueError, FileNotFoundError) as e:
        said = e.args[0] if isinstance(e, KeyError) and e.args else e  # KeyError quotes its str
        print(f"harness catalog {name}: {said}", file=sys.stderr)
        return 2
    return 0


def _show(a: argparse.Namespace) -> int:
    from harness.catalog.show import show

    return _print_or_fail("show", lambda: show(a.key, a.json))


def _diff(a: argparse.Namespace) -> int:
    from harness.catalog.diff import diff

    for d in (a.old, a.new):
        if not d.is_dir():  # else two empty imports compare equal, and nothing says why
            print(f"harness catalog diff: {d} is not a directory (give two import outputs, "
                  f"e.g. recipes/recipe/captured of two checkouts)", file=sys.stderr)
            return 2
    return _print_or_fail("diff", lambda: diff(a.old, a.new))


def _verify_e2e(rest: list[str]) -> int:
    cmd = [sys.executable, "-m", "harness.testing.catalog_e2e", *rest]
    return subprocess.run(cmd, check=False).returncode


def catalog_command(argv: list[str]) -> int:
    p = Parser(prog="harness catalog",
                                description="InferenceX's catalog, read from its own files.")
    sub = p.add_subparsers(dest="cmd", required=True)
    imp = sub.add_parser("import", help="capture every launch of an InferenceX checkout")
    imp.add_argument("dir", type=Path, help="a git checkout of SemiAnalysisAI/InferenceX")
    imp.add_argument("--out", type=Path, default=None,
                     help="recipe directory (default recipes/recipe); captures go to OUT/captured")
    imp.add_argument("--report", type=Path, default=None,
                     help="Markdown report path (default OUT/captured/IMPORT_REPORT.md)")
    imp.add_argument("--keys", default="", help="comma-separated keys (default: all)")
    imp.add_argument("--bound-s", type=float, default=20.0,
                     help="wall-clock bound per captured launch (default 20 s)")
    imp.add_argument("--workers", type=int, default=2, help="launches captured at once")
    imp.add_argument("--no-capture", action="store_true",
                     help="capture nothing: rewrite the report, client settings and recipes "
                          "from the captures of this commit already in OUT/captured")
    imp.set_defaults(fn=_import)
    sh = sub.add_parser("show", help="every launch of a shipped key")
    sh.add_argument("key")
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(fn=_show)
    df = sub.add_parser("diff", help="what changed between two imports")
    df.add_argument("old", type=Path)
    df.add_argument("new", type=Path)
    df.set_defaults(fn=_diff)
    # listed here; its options are the child module's own (argv passed through as given)
    sub.add_parser("verify-e2e", help="every key end to end against its engine's emulator "
                                      "(verify-e2e --help for its options)")
    if argv[:1] == ["verify-e2e"]:
        return _verify_e2e(argv[1:])
    a = p.parse_args(argv)
    return int(a.fn(a))
