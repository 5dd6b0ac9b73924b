"""`harness sweep`'s command line composed and validated before Hydra's app runs.

Hydra's app makes the run's output directory (results/<run_id>/hydra/) and writes the composed
config there before our task function sees the config, so a refusal found there would leave a
run directory behind. Here the same overrides are composed from the same config directory and
search path with Hydra's compose API and checked by the same validator (to_sweep_config), so a
bad command line is refused with nothing written; `--dry-run` stops after this check."""

from __future__ import annotations

from dataclasses import dataclass

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException
from omegaconf import open_dict

from harness.config.errors import ConfigError
from harness.config.locations import repo_root
from harness.config.schema import SweepConfig
from harness.config.validate import Locator, to_sweep_config
from harness.workloads.registry import check_kinds, workload_class

DRY_RUN = "--dry-run"
JSON = "--json"  # with --dry-run: the launches as JSON (catalog show --json's form)
# Hydra flags that make the app do something other than run the sweep (print the config, the
# help, or its own info): the app handles those itself, so there is nothing to check here.
OTHER_MODES = ("-h", "--help", "--hydra-help", "-c", "--cfg", "-i", "--info", "-p",
               "--package", "-r", "--resolve", "--shell-completion", "-sc", "--version")
MULTIRUN = ("-m", "--multirun")


class OverrideError(ConfigError):
    """An override Hydra cannot parse: one line, the override, the problem and the fix."""

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}; fix: {self.fix}"


@dataclass
class Checked:
    sc: SweepConfig
    where: Locator


def overrides_of(argv: list[str]) -> list[str] | None:
    """The overrides of a command line that runs one sweep (what Hydra composes), or None when
    Hydra does something else with it (a flag of OTHER_MODES, or a -m sweep, whose jobs Hydra's
    sweeper expands). `--config-dir DIR` adds DIR to the search path, as in Hydra."""
    out: list[str] = []
    dirs: list[str] = []
    args = iter(argv)
    for a in args:
        if a in OTHER_MODES or a.split("=", 1)[0] in OTHER_MODES or a in MULTIRUN:
            return None
        if a in ("--config-dir", "-cd"):
            dirs.append(next(args, ""))
        elif a.startswith("--config-dir="):
            dirs.append(a.split("=", 1)[1])
        elif a != DRY_RUN:
            out.append(a)
    return searchpath_merged(out, dirs)


def searchpath_merged(overrides: list[str],
                      config_dirs: tuple[str, ...] | list[str] = ()) -> list[str]:
    """One `hydra.searchpath` holding the user's entries (`hydra.searchpath=[...]`, then any
    --config-dir) and the repository root (scenarios/ sits beside recipes/, the primary config
    directory). Hydra keeps only the last `hydra.searchpath` override, so a second one of ours
    would drop the user's."""
    from harness.config.groups import searchpath_entries

    entries: list[str] = []
    rest = []
    for o in overrides:
        if o.lstrip("+").startswith("hydra.searchpath="):
            entries += searchpath_entries(o)
        else:
            rest.append(o)
    entries += [f"file://{d}" if "://" not in d else d for d in config_dirs if d]
    entries.append(f"file://{repo_root()}")
    return [*rest, f"hydra.searchpath=[{','.join(entries)}]"]


def grammar_error(overrides: list[str]) -> ConfigError | None:
    """An override Hydra's grammar rejects (`concurrency=[1,2`): the override, the problem and
    the fix, instead of Hydra's parser message, a link and exit 1."""
    parser = OverridesParser.create()
    for o in overrides:
        try:
            parser.parse_overrides([o])
        except OverrideParseException as e:
            problem = " ".join(str(e).split("See https://")[0].split())
            key = o.lstrip("+~").split("=", 1)[0]
            shown = o[2:] if o.startswith("++") else o  # `++` is the CLI's, not the user's
            return OverrideError(
                f"the command-line override '{shown}'", key,
                f"Hydra's override grammar rejects it ({problem})",
                f"close every bracket and quote ({key}=[1,2,4]), and quote a value with "
                f"spaces, commas or brackets ('{key}=\"a, b\"')")
    return None


def check(overrides: list[str]) -> Checked:
    """Compose `sweep` with the overrides and validate it: the SweepConfig, or a ConfigError."""
    bad = grammar_error(overrides)
    if bad is not None:
        raise bad
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(repo_root() / "recipes"), version_base=None,
                                   job_name="app"):
            cfg = compose("sweep", overrides=overrides, return_hydra_config=True)
        choices = dict(cfg.hydra.runtime.choices)
        with open_dict(cfg):
            del cfg["hydra"]
    finally:
        GlobalHydra.instance().clear()
    where = Locator(choices, [o for o in overrides if not o.lstrip("+~").startswith("hydra")])
    sc = to_sweep_config(cfg, where)
    check_kinds(sc, where)  # the engine's and the workload's own rules
    return Checked(sc, where)


def check_traces(sc: SweepConfig) -> None:
    """Load and check the traces of a workload that replays them, as the sweep does before any
    engine starts (harness.workloads.agentic_lanes.load_fitted: every file read, every field
    finite and in range, the fit applied), so `--dry-run` refuses a missing or malformed trace
    with the sweep's own message. A corpus named by a hub id alone is not downloaded here: the
    dry run fetches nothing."""
    from harness.workloads.agentic_lanes import load_fitted, scenario_file

    scen = sc.scenario
    if not workload_class(scen.kind).reads_traces:
        return
    if scen.dataset.id and not scen.dataset.local_dir and not scen.trace_files:
        return
    load_fitted(scen, repo_root(), scenario_file(sc))


def dry_run(checked: Checked, as_json: bool = False) -> str:
    """What `--dry-run` checks beyond the config (every launch the recipe makes, its
    acceptance plan and the engine adapter's own refusals; each cheap, none starts anything),
    then every launch as the sweep would start it: image, working directory, mounts, the
    command, environment, each file it writes with its content, setup steps, helpers and the
    client's settings, from the rendering `harness catalog show --json` prints
    (harness/catalog/render.py). The job's port P is chosen free when the launch starts; it is
    shown as 8888 (InferenceX's), and every {port+N} moves with it."""
    import json

    from harness.catalog.render import UPSTREAM_PORT, render_launches
    from harness.catalog.show import launch_lines
    from harness.config.launches import launches
    from harness.engines.registry import adapter_class
    from harness.engines.workspace import check_workspace
    from harness.speculation import acceptance

    sc, where = checked.sc, checked.where
    points = 0
    runs = launches(sc)
    for launch in runs:
        acceptance.resolve(launch.sc, bool(sc.engine.can_inject_acceptance),
                           where("speculator.acceptance.mode"),
                           synthetic_text=workload_class(launch.sc.scenario.kind).synthetic_text)
        adapter_class(launch.sc.engine.kind).check(launch.sc, where)
        if adapter_class(launch.sc.engine.kind).reads_workspace:
            check_workspace(launch.sc, where)
        points += len(workload_class(launch.sc.scenario.kind).load_axis(launch.sc))
        check_traces(launch.sc)
    rendered = render_launches(sc, port=UPSTREAM_PORT, host=None)
    summary = (f"dry run: the config composes and validates ({len(runs)} engine launches, "
               f"{points} points); nothing was started or written")
    if as_json:
        return json.dumps({"summary": summary, "port": UPSTREAM_PORT, "launches": rendered},
                          indent=1, sort_keys=True)
    head = [f"each launch as the sweep starts it (job port P shown as {UPSTREAM_PORT}; the "
            "sweep picks a free one, {port+N} move with it; {launch_dir} is "
            f"{sc.results_dir}/{sc.run_id}/launch/<tag>)", ""]
    return "\n".join([*head, *launch_lines(rendered), "", summary])
