"""The `harness` command: sweep (Hydra), dashboard, and the tools around results."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from harness.cli.parser import Parser
from harness.cli.results import _baseline, _dashboard, _export, _gate, _metrics, _table
from harness.cli.sweep_run import (
    RESULTS_UNWRITABLE,
    ResultsUnwritable,
    check_sweep_location,
    interrupted_message,
    override,
    sweep_status,
)
from harness.config.errors import ConfigError
from harness.workloads.traces.model import TraceError

USAGE = """harness <command> [options]

commands:
  sweep       run a benchmark sweep (Hydra: `harness sweep --help` lists groups and overrides)
  dashboard   write a self-contained HTML dashboard from run directories
  traces      inspect trace files (`harness traces stats FILE...`)
  acceptance  the acceptance-length table (`harness acceptance list`)
  calibrate   measure acceptance lengths on real agentic-coding text
  ingest-inferencex  InferenceX published rows -> a run directory
  table       throughput at interactivity targets along each frontier (CSV, Markdown)
  speculation speedup of speculative series over plain: crossover load, best k, break-even AL
  gate        compare a candidate run with a baseline (exit 0 pass, 1 regression, 2 invalid)
  baseline    save a run's points as a committed baseline
  metrics     every metric key: label, unit, which direction is better, definition
  export      a run in other tools' formats (`harness export inferencex RUN_DIR --out DIR`)
  eval        accuracy evals (lm-eval, InferenceX's settings) on a launched or attached engine
  check       `harness check lossless`: is speculative decoding lossless on this engine?
  catalog     InferenceX's catalog from a checkout (`harness catalog import DIR`, show, diff)
"""


def _force_value_overrides(argv: list[str]) -> list[str]:
    """`speculator.acceptance.length=2.5` -> `++speculator.acceptance.length=2.5`.

    Hydra only lets a plain override touch keys the composed YAML already spells out; every
    schema field should be settable, and a misspelt key should reach our validator (which names
    the file, the key and the fix), so value overrides are forced. Group choices (`engine=x`),
    hydra.* settings, and explicit +/~ overrides are left alone.
    """
    from harness.config.groups import GROUP_DIRS

    out = []
    for a in argv:
        key = a.split("=", 1)[0]
        if (a.startswith("-") or "=" not in a or key[:1] in "+~" or key.startswith("hydra")
                or key in GROUP_DIRS or "@" in key or "/" in key):
            out.append(a)
        else:
            out.append("++" + a)
    return out


def _sweep(argv: list[str]) -> int:
    try:
        from harness.config import fast_yaml
        from harness.config.groups import check_group_choices, check_yaml_files
        from harness.sweep import app as sweep_app

        fast_yaml.install()  # libyaml's parser for Hydra's recipe files (same data, less CPU)

        # `--fresh` is the flag users expect; Hydra would reject it, so it becomes the setting
        argv = ["fresh=true" if a == "--fresh" else a for a in argv]
        check_group_choices(argv)  # an unknown choice fails here with the options listed
        check_yaml_files(argv)  # a file that does not load: one line, not Hydra's traceback
        argv = _force_value_overrides(argv)
        helping = "--help" in argv or "-h" in argv
        if override(argv, "run_id") is None and not helping:
            argv = [*argv, f"run_id={time.strftime('%Y%m%d-%H%M%S')}"]
        if not helping:
            check_sweep_location(argv)
        sweep_app.main(argv)
        from harness.sweep import interrupts

        interrupts.check()  # one swallowed after the last point still ends the run as 130
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Ctrl-C: every `finally` has run (the engine is stopped); say what was kept
        print(interrupted_message(), file=sys.stderr, flush=True)
        _forget_nested_interrupt()
        return 130
    except _stopped() as e:  # SIGTERM or scancel: the same line; 143
        print(interrupted_message(), file=sys.stderr, flush=True)
        return int(e.code)
    return sweep_status()


def _stopped() -> tuple[type[BaseException], ...]:
    """What stops a sweep from outside, looked up only when something was raised: the Slurm
    module (the schema, OmegaConf) is not imported by every other command's start."""
    from harness.engines.slurm_job import AllocationCancelled

    return (Terminated, AllocationCancelled)


def _forget_nested_interrupt() -> None:
    """Make a handled Ctrl-C exit with status 130 every time.

    CPython notes a KeyboardInterrupt that ends any nested PyRun_String (extension modules run
    Python source that way while they import) and, under `python -m`, kills the process with
    SIGINT at exit although we handled it: a random -2 instead of 130. Running an empty string
    clears the note."""
    with contextlib.suppress(AttributeError, OSError):
        import ctypes

        ctypes.pythonapi.PyRun_SimpleString(b"pass")


def _traces(argv: list[str]) -> int:
    from harness.cli.traces import traces_command  # trace files, or a corpus streamed

    return traces_command(argv)


def _acceptance(argv: list[str]) -> int:
    from harness.config.locations import repo_root
    from harness.speculation.acceptance import load_table

    p = Parser(prog="harness acceptance",
                                description="The acceptance-length table (recipes/acceptance/).")
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="show the table")
    ls.add_argument("--model")
    ls.add_argument("--speculator")
    imp = sub.add_parser("import-golden", help="rewrite published.csv's InferenceX golden rows "
                         "from DIR/golden_al_distribution/*.yaml (an InferenceX checkout)")
    imp.add_argument("dir", type=Path)
    imp.add_argument("--commit", help="the checkout's commit (default: git rev-parse HEAD)")
    a = p.parse_args(argv)
    if a.cmd == "import-golden":
        from harness.speculation.golden import import_golden

        if not (a.dir / "golden_al_distribution").is_dir():
            print(f"harness acceptance import-golden: {a.dir / 'golden_al_distribution'} is not "
                  "a directory; point DIR at a checkout of SemiAnalysisAI/InferenceX",
                  file=sys.stderr)
            return 2
        return import_golden(a.dir, a.commit)
    rows = [r for r in load_table(repo_root() / "recipes" / "acceptance")
            if (not a.model or r.model == a.model)
            and (not a.speculator or r.speculator == a.speculator)]
    print(f"{'model':<22} {'speculator':<13} {'k':>2} {'think':<5} {'AL':>6}  {'prec':<8} source")
    for r in sorted(rows, key=lambda r: (r.model, r.speculator, r.thinking, r.k)):
        src = r.source_kind if r.measured_on else r.source.split("/blob/")[0].split("//")[-1]
        print(f"{r.model:<22} {r.speculator:<13} {r.k:>2} {r.thinking:<5} {r.al:>6.3f}  "
              f"{r.precision:<8} {src} ({r.file})"
              + (f" draft={r.draft}" if r.draft else "")
              + (f" {r.sampled}" if r.sampled != "greedy" else ""))
    print(f"{len(rows)} rows")
    return 0


def _calibrate(argv: list[str]) -> int:
    from harness.config.compose import compose_sweep
    from harness.config.locations import repo_root
    from harness.sweep.calibrate import (
        add_arguments,
        calibrate,
        golden_yaml,
        settings_from_args,
        upsert,
    )

    p = Parser(
        prog="harness calibrate",
        description="Measure acceptance lengths as InferenceX's golden curves were: the real "
                    "drafter, one clean engine launch per (thinking mode, draft length), "
                    "SPEED-Bench coding prompts (--dataset) or the shipped SWE-agent text, the "
                    "model's chat template, AL = 1 + accepted / drafts from the engine's "
                    "counters; write rows to the acceptance table.")
    add_arguments(p, repo_root(), repo_root() / "recipes" / "acceptance")
    a = p.parse_args(argv)

    def sc_for(k: int, thinking: bool | None):
        ov = [f"model={a.model}", f"engine={a.engine}", f"speculator={a.speculator}",
              f"speculator.k={k}", "speculator.acceptance.mode=real", "run_id=calibrate",
              *a.overrides]
        if thinking is not None:
            ov.append(f"thinking={'true' if thinking else 'false'}")
        return compose_sweep(ov)

    cs = settings_from_args(a, sc_for(a.k[0], None).chip.name)
    a.work_dir.mkdir(parents=True, exist_ok=True)
    # each row is written as it is measured: an interrupted calibration keeps what it measured
    keep = None if a.print_only else (lambda row: upsert([row], a.out))
    rows = calibrate(sc_for, cs, a.work_dir, repo_root(), keep=keep)
    if not a.print_only:
        print(f"wrote {len(rows)} rows to {a.out}")
    if a.golden_yaml:
        a.golden_yaml.parent.mkdir(parents=True, exist_ok=True)
        a.golden_yaml.write_text(golden_yaml(rows))
        print(f"wrote the curves to {a.golden_yaml}")
    return 0


def _speculation(argv: list[str]) -> int:
    from harness.cli.speculation import main as speculation_main

    return speculation_main(argv)


def _catalog(argv: list[str]) -> int:
    from harness.cli.catalog import catalog_command  # reads an InferenceX checkout

    return catalog_command(argv)


def _ingest(argv: list[str]) -> int:
    from harness.publish.ingest import IngestError, ingest

    p = Parser(prog="harness ingest-inferencex",
                                description="Convert InferenceX dashboard rows into a run "
                                            "directory of harness points.")
    p.add_argument("rows", type=Path, help="JSON rows (GET /api/v1/benchmarks format)")
    p.add_argument("--out", type=Path, required=True, help="run directory to write")
    a = p.parse_args(argv)
    try:
        points = ingest(a.rows, a.out)
    except IngestError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    print(f"{len(points)} points written to {a.out}")
    return 0


def _eval(argv: list[str]) -> int:
    from harness.cli.correctness import eval_command

    return eval_command(argv)


def _check(argv: list[str]) -> int:
    from harness.cli.correctness import check_command

    return check_command(argv)


COMMANDS = {"sweep": _sweep, "dashboard": _dashboard, "traces": _traces,
            "acceptance": _acceptance, "calibrate": _calibrate, "ingest-inferencex": _ingest,
            "gate": _gate, "table": _table, "baseline": _baseline, "metrics": _metrics,
            "export": _export, "eval": _eval, "check": _check, "catalog": _catalog,
            "speculation": _speculation}


class Terminated(SystemExit):
    """SIGTERM, raised where the main thread is (SystemExit: no `except Exception` in a
    library swallows it)."""


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM (a scheduler cancelling the job, `kill`) unwinds like Ctrl-C: every `finally`
    runs, so a launched engine is stopped rather than orphaned. The exit status is 143
    (128 + SIGTERM, what a scheduler expects of a job it cancelled); a sweep prints the same
    "points kept" line as for Ctrl-C (README, Exit codes)."""
    raise Terminated(128 + signum)


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # output that fit the buffer meets a closed pipe only here
        return code
    except BrokenPipeError:
        return _closed_pipe()


# what a shell reports for a tool that SIGPIPE ended (`yes | head -1`)
SIGPIPE_STATUS = 128 + signal.SIGPIPE


def _closed_pipe() -> int:
    """The reader of our output went away (`harness acceptance list | head -1`): the ordinary
    end of a pipeline, not an error, so nothing is printed (stderr may be that same pipe).
    stdout is pointed at /dev/null so the interpreter's last flush of what is still buffered
    cannot fail and print "Exception ignored" either. The status is the conventional 141 that
    coreutils give under `set -o pipefail`: the output was cut short."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return SIGPIPE_STATUS


def _main(argv: list[str] | None) -> int:
    from harness.sweep import interrupts

    interrupts.install()
    signal.signal(signal.SIGTERM, _terminate)
    interrupts.guard_sigterm()  # a SIGTERM inside an event loop's callback is not swallowed
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    cmd = COMMANDS.get(argv[0])
    if cmd is None:
        import difflib

        close = difflib.get_close_matches(argv[0], list(COMMANDS), n=2, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        print(f"harness: unknown command {argv[0]!r}; {hint}`harness --help` lists the "
              f"commands", file=sys.stderr)
        return 2
    try:
        return cmd(argv[1:])
    except BrokenPipeError:
        raise  # a closed pipe, not bad input: main() ends quietly
    except ResultsUnwritable as e:
        print(f"harness {argv[0]}: {e}", file=sys.stderr)
        return RESULTS_UNWRITABLE
    except ConfigError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    except TraceError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:
        return int(e.code) if isinstance(e.code, int) else (0 if e.code is None else 1)
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(f"harness {argv[0]}: interrupted", file=sys.stderr)
        _forget_nested_interrupt()
        return 130
    except Exception as e:
        code = _one_line_error(argv[0], e)
        if code is None:
            raise
        return code


def _one_line_error(cmd: str, e: Exception) -> int | None:
    """Errors a user's input causes (a missing file, a file where a directory belongs, bad
    contents) as `harness <cmd>: <message>`, exit 2; a write that failed, exit 4. None for
    anything else: a bug in the harness, which keeps its traceback."""
    from harness.record.results import ResultsWriteError

    if isinstance(e, ResultsWriteError):  # exit 4 when the disk failed, 2 for a bad path
        print(f"harness {cmd}: {e}", file=sys.stderr)
        return 4 if e.disk_fault else 2
    if isinstance(e, OSError):
        what = f"{e.strerror or e}: {e.filename}" if e.filename else str(e.strerror or e)
        print(f"harness {cmd}: {what}; check the path given", file=sys.stderr)
        return 2
    if isinstance(e, ValueError):
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"harness {cmd}: {first}", file=sys.stderr)
        return 2
    return None


if __name__ == "__main__":
    sys.exit(main())
