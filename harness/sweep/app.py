"""`harness sweep`: the Hydra application. One Hydra job = one recipe on one engine launch."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from harness.config.errors import ConfigError
from harness.config.groups import group_listing
from harness.config.locations import repo_root
from harness.config.validate import Locator, to_sweep_config
from harness.engines.base import EngineConfigError
from harness.engines.process import EngineStartError
from harness.engines.weights import WeightsNotFound
from harness.record.results import ResultsWriteError, RunDir, RunLocked, read_points, safe_name
from harness.sweep import interrupts
from harness.workloads.traces.model import TraceError

log = logging.getLogger("harness")
# used by the help template in recipes/sweep.yaml
OmegaConf.register_new_resolver("harness_groups", group_listing, replace=True)
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
    """The resolved config as saved with the run: every interpolation resolved except those
    that read the environment (a secret passed as ${oc.env:KEY} must never be written out)."""
    raw = OmegaConf.to_container(cfg, resolve=False)
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
        raise SystemExit(2) from None
    except EngineStartError as e:
        print(f"harness: engine failed to start: {e}", file=sys.stderr)
        raise SystemExit(3) from None
    print(f"results: {run.root}", flush=True)


def main(argv: list[str]) -> None:
    """Run the Hydra app with argv (the arguments after `harness sweep`)."""
    # scenarios/ sits beside recipes/ (the primary config's directory): add the repo root.
    searchpath = f"hydra.searchpath=[file://{repo_root()}]"
    sys.argv = ["harness sweep", *argv, searchpath]
    sweep()
