"""`harness sweep`: the Hydra application. One Hydra job = one recipe on one engine launch."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from harness.config.errors import ConfigError
from harness.config.groups import group_listing
from harness.config.locations import repo_root
from harness.config.settings_doc import settings_help
from harness.config.validate import Locator, to_sweep_config
from harness.engines.base import EngineConfigError
from harness.engines.process import EngineStartError
from harness.engines.weights import WeightsNotFound
from harness.record.results import ResultsWriteError, RunDir, RunLocked, read_points, safe_name
from harness.sweep import interrupts, precheck
from harness.workloads.traces.model import TraceError

log = logging.getLogger("harness")


def settings_listing(*, _root_: DictConfig) -> str:
    """Every setting of the composed config for the help template: its value as composed
    (interpolations as written: a secret read from the environment is never shown), default,
    range or choices and help, read from the schemas' fields. `$` is doubled because Hydra
    runs the template through string.Template after OmegaConf resolves it."""
    values = OmegaConf.to_container(_root_, resolve=False, throw_on_missing=False)
    return settings_help(values).replace("$", "$$")  # type: ignore[arg-type]


# used by the help template in recipes/sweep.yaml
OmegaConf.register_new_resolver("harness_groups", group_listing, replace=True)
OmegaConf.register_new_resolver("harness_settings", settings_listing, replace=True)
# The run this process is writing (for the Ctrl-C message of `harness sweep`), once known.
current_run: tuple[RunDir, str] | None = None


def points_on_disk(run: RunDir) -> int:
    """How many points of the run can be read back (what an interruption keeps)."""
    try:
        return len(read_points(run.root))
    except OSError:
        return 0


def _write_failed(e: ResultsWriteError, run: RunDir, run_id: str) -> SystemExit:
    """One line for a results write that failed (disk full, read-only): what, why, and how
    to resume; exit code 4. What is on disk stays as it was."""
    print(f"harness: cannot write {e.path}: {e.reason}; free space (or make "
          f"{run.root} writable) and rerun with run_id={run_id} to resume: "
          f"{points_on_disk(run)} points are on disk", file=sys.stderr, flush=True)
    return SystemExit(4)


def _latest_link(results_dir: str, run_id: str) -> None:
    link = os.path.join(results_dir, "latest")
    tmp = f"{link}.{os.getpid()}.tmp"
    try:
        os.symlink(run_id, tmp)
        os.replace(tmp, link)
    except OSError:
        pass


def _keep_env_interpolations(node: Any) -> Any:
    """Every `${oc.env:...}` escaped, so it is written as the interpolation, not its value."""
    if isinstance(node, dict):
        return {k: _keep_env_interpolations(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_keep_env_interpolations(v) for v in node]
    if isinstance(node, str) and "oc.env" in node:
        return node.replace("${", "\\${")
    return node


def config_text(cfg: DictConfig) -> str:
    """The resolved config as saved with the run: every setting, the schema's defaults under
    what the recipe and overrides set (recipes/sweep.yaml no longer restates them), every
    interpolation resolved except those that read the environment (a secret passed as
    ${oc.env:KEY} must never be written out)."""
    from harness.config.schema import SweepConfig

    defaults = OmegaConf.create(OmegaConf.to_container(OmegaConf.structured(SweepConfig)))
    raw = OmegaConf.to_container(OmegaConf.merge(defaults, cfg), resolve=False)
    return OmegaConf.to_yaml(OmegaConf.create(_keep_env_interpolations(raw)), resolve=True)


@hydra.main(version_base=None, config_path=str(repo_root() / "recipes"), config_name="sweep")
def sweep(cfg: DictConfig) -> None:
    from harness.sweep.runner import run_job

    hc = HydraConfig.get()
    where = Locator(dict(hc.runtime.choices), list(hc.overrides.task))
    try:
        sc = to_sweep_config(cfg, where)
    except ConfigError as e:
        print(f"harness: {e}", file=sys.stderr)
        _undo_start()
        raise SystemExit(2) from None
    except Exception:
        # A Ctrl-C that landed inside OmegaConf's merge can come out as another error (its
        # finally block read a variable the interrupt left unset: UnboundLocalError, a
        # traceback and exit 1); with a Ctrl-C on record it is the interrupt (exit 130).
        interrupts.check()
        raise
    global current_run
    # A full disk must not turn every later log call (Hydra logs to a file in the run
    # directory) into a traceback: the failed results write reports it, once.
    logging.raiseExceptions = False
    try:
        run = RunDir.open(sc.results_dir, sc.run_id)
        run.lock()  # one writer per run directory; held until this process exits
    except RunLocked as e:
        print(f"harness: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except ResultsWriteError as e:
        print(f"harness: {e}", file=sys.stderr)
        raise SystemExit(4) from None
    current_run = (run, sc.run_id)
    # Unique per recipe, so several sweeps (or a -m sweep) can share one run directory; the
    # names come from recipes, so they are made safe as one file name.
    num = hc.job.num if hc.mode and hc.mode.name == "MULTIRUN" else 0
    job = safe_name(f"job{num}-{sc.scenario.name}-{sc.engine.kind}-{sc.speculator.method}")
    try:
        run.write_provenance(repo_root(), sys.argv)
        run.write_config(job, config_text(cfg))
        _latest_link(sc.results_dir, sc.run_id)
        print(f"run directory: {run.root}", flush=True)
        run_job(sc, run, job, repo_root(), where)
    except ResultsWriteError as e:
        raise _write_failed(e, run, sc.run_id) from None
    except (EngineConfigError, WeightsNotFound, ConfigError, TraceError) as e:
        print(f"harness: {e}", file=sys.stderr)
        _undo_start()
        raise SystemExit(2) from None
    except EngineStartError as e:
        print(f"harness: engine failed to start: {e}", file=sys.stderr)
        raise SystemExit(3) from None
    print(f"results: {run.root}", flush=True)


@dataclass
class _Before:
    """What the results directory held before this sweep started: what a refused start puts
    back (harness.sweep.precheck: Hydra writes results/<run_id>/hydra/ before our app runs)."""
    results_dir: Path
    run_id: str
    results_dir_existed: bool
    run_existed: bool
    latest: str | None  # where results/latest pointed


_before: _Before | None = None


def _note_before(results_dir: str, run_id: str) -> None:
    global _before
    d = Path(results_dir)
    try:
        latest: str | None = os.readlink(d / "latest")
    except OSError:
        latest = None
    _before = _Before(d, run_id, d.exists(), os.path.lexists(d / run_id), latest)


def _undo_start() -> None:
    """A start refused before its first point leaves the results directory as it was: the run
    directory it made removed (never one that existed before, nor one holding points) and
    results/latest pointing where it did."""
    b = _before
    if b is None:
        return
    root, link = b.results_dir / b.run_id, b.results_dir / "latest"
    if not b.run_existed and points_on_disk(RunDir(root)) == 0:
        shutil.rmtree(root, ignore_errors=True)
    try:
        if os.readlink(link) == b.run_id and b.latest != b.run_id:
            if b.latest is None:
                os.unlink(link)
            else:
                _latest_link(str(b.results_dir), b.latest)
    except OSError:
        pass
    if not b.results_dir_existed:
        with contextlib.suppress(OSError):
            b.results_dir.rmdir()  # only if empty


def main(argv: list[str]) -> None:
    """Run the Hydra app with argv (the arguments after `harness sweep`): the command line is
    composed and checked first (harness.sweep.precheck), so a refusal writes nothing."""
    interrupts.guard_sigterm()  # a SIGTERM must not land in a callback that swallows it
    dry = precheck.DRY_RUN in argv
    as_json = dry and precheck.JSON in argv
    argv = [a for a in argv if a != precheck.DRY_RUN and not (dry and a == precheck.JSON)]
    overrides = precheck.overrides_of(argv)
    if overrides is None:
        if dry:
            raise ConfigError("the command line", precheck.DRY_RUN,
                              "--dry-run checks one sweep, not a -m sweep or a Hydra mode",
                              "drop -m (check each choice on its own) or --cfg/--info")
        bad = precheck.grammar_error([a for a in argv if not a.startswith("-")])
        if bad is not None:
            raise bad
    else:
        try:
            checked = precheck.check(overrides)
        except Exception:
            interrupts.check()  # a Ctrl-C inside OmegaConf's merge (see sweep()) is the interrupt
            raise
        if dry:
            try:
                print(precheck.dry_run(checked, as_json=as_json), flush=True)
            except EngineConfigError as e:
                print(f"harness: {e}", file=sys.stderr)
                raise SystemExit(2) from None
            return
        _note_before(checked.sc.results_dir, checked.sc.run_id)
    sys.argv = ["harness sweep", *_overrides_together(precheck.searchpath_merged(argv))]
    sweep()


def _overrides_together(args: list[str]) -> list[str]:
    """The appended `hydra.searchpath=` moved beside the user's first override: Hydra's
    argparse takes its overrides as one run of positionals, so `engine=vllm --help` followed
    by it would be refused as unrecognized arguments."""
    *rest, searchpath = args
    first = next((i for i, a in enumerate(rest) if "=" in a and not a.startswith("-")), len(rest))
    return [*rest[:first], searchpath, *rest[first:]]
