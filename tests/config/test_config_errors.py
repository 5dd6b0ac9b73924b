"""Bad configs fail with the file, the key and the fix, before any server starts."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import open_dict

from harness.cli.main import _force_value_overrides
from harness.config.errors import ConfigError
from harness.config.groups import check_group_choices
from harness.config.locations import repo_root
from harness.config.validate import Locator, to_sweep_config
from harness.workloads.registry import check_kinds

RECIPES = str(repo_root() / "recipes")


def _compose(overrides: list[str], extra_search: str = ""):
    # as `harness sweep` passes them: a plain `key=v` forced, since recipes/sweep.yaml spells
    # out only what differs from the schemas' defaults
    overrides = _force_value_overrides(overrides)
    GlobalHydra.instance().clear()
    paths = [f"file://{repo_root()}"] + ([f"file://{extra_search}"] if extra_search else [])
    search = f"hydra.searchpath=[{','.join(paths)}]"
    with initialize_config_dir(config_dir=RECIPES, version_base=None):
        cfg = compose("sweep", overrides=[*overrides, "run_id=t", search],
                      return_hydra_config=True)
    choices = dict(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, Locator(choices, overrides)


def validated(cfg, where):
    """Both steps every command runs: the structure and shared rules (config), then the rules
    of the engine and workload kinds, asked of their plug-ins."""
    sc = to_sweep_config(cfg, where)
    check_kinds(sc, where)
    return sc


def _error(overrides: list[str], extra_search: str = "") -> ConfigError:
    cfg, where = _compose(overrides, extra_search)
    with pytest.raises(ConfigError) as ei:
        validated(cfg, where)
    return ei.value


def test_default_config_is_valid() -> None:
    cfg, where = _compose([])
    sc = validated(cfg, where)
    assert sc.engine.kind == "llamacpp" and sc.scenario.kind == "fixed"
    assert sc.concurrency == [1, 2, 4, 8]


def test_misspelt_key_names_the_file_the_key_and_the_right_spelling() -> None:
    e = _error(["+model.context_lenght=9"])
    assert e.key == "model.context_lenght"
    assert "context_length" in e.fix
    assert "command-line override" in e.where


def test_misspelt_key_in_a_recipe_file_names_that_file(tmp_path) -> None:
    # a recipe of the user's own, on Hydra's search path (the repository's recipes untouched)
    (tmp_path / "model").mkdir()
    bad = tmp_path / "model" / "_test_bad.yaml"
    bad.write_text((repo_root() / "recipes/model/smollm2-135m.yaml").read_text()
                   + "contxt_length: 5\n")
    e = _error(["model=_test_bad"], extra_search=str(tmp_path))
    assert not (repo_root() / "recipes" / "model" / "_test_bad.yaml").exists()
    assert e.where == "recipes/model/_test_bad.yaml"
    assert e.key == "model.contxt_length" and "context_length" in e.fix


def test_wrong_type() -> None:
    e = _error(["scenario.isl=lots"])
    assert e.key == "scenario.isl"
    assert "int" in e.fix and "lots" in e.problem


def test_unknown_choice_lists_the_options() -> None:
    with pytest.raises(ConfigError) as ei:
        check_group_choices(["engine=llamacp"])
    e = ei.value
    assert e.key == "engine" and "recipes/engine/llamacp.yaml" in e.problem
    assert "'llamacpp'" in e.fix and "endpoint" in e.fix


def test_context_overflow_is_an_impossible_combination() -> None:
    e = _error(["scenarios=fixed-8k1k"])
    assert e.key == "scenario.isl" and e.where == "scenarios/fixed-8k1k.yaml"
    assert "8192" in e.problem and "fixed-1k128" in e.fix


def test_speculator_the_engine_cannot_run() -> None:
    e = _error(["speculator=mtp"])
    assert e.key == "speculator.method" and e.where == "recipes/speculator/mtp.yaml"
    assert "ngram" in e.fix


def test_topology_the_embedded_engine_cannot_serve() -> None:
    e = _error(["topology.tp=2"])
    assert e.key == "topology.tp" and "tp=1" in e.fix


def test_endpoint_needs_a_url() -> None:
    e = _error(["engine=endpoint"])
    assert e.key == "engine.url" and "engine.url=" in e.fix


def test_unknown_kinds_list_the_registries_kinds() -> None:
    from harness.engines.registry import ENGINE_KINDS
    from harness.workloads.registry import WORKLOAD_KINDS

    e = _error(["engine.kind=tpu-serve"])
    assert e.key == "engine.kind" and all(k in e.fix for k in ENGINE_KINDS)
    e = _error(["scenario.kind=batch"])
    assert e.key == "scenario.kind" and all(k in e.fix for k in WORKLOAD_KINDS)


@pytest.mark.parametrize(("overrides", "key", "problem"), [
    (["scenarios=agentic-weka-cpu", "++scenario.arrival=poisson",
      "++scenario.request_rate=[1]"],
     "scenario.arrival", "open-loop arrivals are for fixed-sequence scenarios, not agentic"),
    (["++scenario.correlation_headers=[X-Session-ID]"], "scenario.correlation_headers",
     "a fixed scenario sends no correlation ids"),
    (["++scenario.dataset.id=a/b"], "scenario.dataset.id", "replay no traces"),
    (["scenarios=agentic-weka-cpu", "++engine.profile=true"], "engine.profile",
     "wired for fixed-sequence points, not agentic"),
])
def test_a_kind_refuses_what_its_workload_class_does_not_offer(overrides, key,
                                                                problem) -> None:
    e = _error(overrides)
    assert e.key == key and problem in e.problem, str(e)


def test_empty_concurrency() -> None:
    e = _error(["concurrency=[]"])
    assert e.key == "concurrency"


def test_cli_exits_2_with_the_message_before_starting_anything(tmp_path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "sweep", "scenarios=fixed-8k1k",
         f"results_dir={tmp_path}"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "config error in scenarios/fixed-8k1k.yaml" in r.stderr
    assert "key scenario.isl:" in r.stderr
    assert not list(tmp_path.glob("*/servers/*.log"))  # no engine was started


def test_sweep_help_lists_every_group_and_its_options() -> None:
    r = subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep", "--help"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    groups = r.stdout.split("== Config groups ==")[1].split("== Settings")[0]
    assert "scenarios: agentic-" in groups and "agentic-weka," in groups  # sorted by name
    assert "fixed-128x64" in groups
    engines = sorted(f.stem for f in (repo_root() / "recipes" / "engine").glob("*.yaml"))
    assert f"engine: {', '.join(engines)}\n" in groups and "llamacpp, " in groups
    # a subfolder's options are counted and named by where they are, not spelt out
    n = len(list((repo_root() / "recipes" / "recipe" / "multinode").glob("*.yaml")))
    assert f"multinode/<name> ({n} more, in recipes/recipe/multinode/)" in groups
    assert "acceptance" not in groups  # data that merely holds YAML is not a choice
    assert "--fresh run_id=<id>" in r.stdout


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep", *args],
                          capture_output=True, text=True, timeout=300)


def test_an_override_hydra_cannot_parse_is_one_line_and_exit_2(tmp_path) -> None:
    r = _cli("concurrency=[1,2", f"results_dir={tmp_path}/res")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "'concurrency=[1,2'" in lines[0] and "fix:" in lines[0]
    assert "concurrency=[1,2,4]" in lines[0] and "hydra.cc" not in lines[0]
    assert not (tmp_path / "res").exists()


def test_a_single_value_where_a_list_belongs(tmp_path) -> None:
    r = _cli("concurrency=0", f"results_dir={tmp_path}/res")
    assert r.returncode == 2, r.stderr
    assert "key concurrency:" in r.stderr and "a list is expected" in r.stderr
    assert "concurrency=[1,2,4]" in r.stderr and "AnyNode" not in r.stderr
    assert not (tmp_path / "res").exists()  # composed and refused before Hydra wrote a thing


def test_a_start_refused_inside_the_run_leaves_the_results_as_they_were(tmp_path) -> None:
    """A trace that does not load is found once the workload is built (after Hydra made the
    run's directory and results/latest was repointed): both are put back."""
    res = tmp_path / "res"
    (res / "old").mkdir(parents=True)
    (res / "latest").symlink_to("old")
    bad = tmp_path / "bad.json"
    bad.write_text('{"nope": 1}')
    r = _cli("engine=endpoint", "engine.url=http://127.0.0.1:9", "scenarios=agentic-weka-cpu",
             f"scenario.trace_files=[{bad}]", f"results_dir={res}", "run_id=tr")
    assert r.returncode == 2, r.stderr[-2000:]
    assert "bad trace" in r.stderr
    assert sorted(p.name for p in res.iterdir()) == ["latest", "old"]
    assert (res / "latest").readlink().as_posix() == "old"
