"""`harness sweep recipe=KEY --dry-run` prints every launch as the sweep would start it, from
the rendering `harness catalog show --json` prints (harness/catalog/render.py), and starts or
writes nothing; a launch's engine.files (Mooncake's store config) are written into the launch
dir and mounted where upstream's script put them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.catalog.render import compose_recipe, render_launches
from harness.config.errors import ConfigError
from harness.engines.registry import make_adapter
from harness.engines.workspace import check_workspace, launch_name

ROOT = Path(__file__).resolve().parents[2]
KEY = "kimik3-fp4-b300-vllm-agentic-dspark"
CAPTURED = json.loads((ROOT / "recipes/recipe/captured" / f"{KEY}.json").read_text())


def _captured_config(conc: int) -> str:
    [c] = [c for c in CAPTURED["launches"] if c["conc"] == conc]
    return c["server"]["files"]["/workspace/results/mooncake_config.json"]


@pytest.mark.slow  # one CLI composition of a shipped recipe
def test_dry_run_prints_the_launch_with_its_files_and_client(tmp_path: Path) -> None:
    out = tmp_path / "results"
    p = subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep", f"recipe={KEY}",
                        "row_concurrency=[1]", f"results_dir={out}", "--dry-run"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert not out.exists()  # nothing written
    # the file upstream's script writes, with its content, at the path the server is given
    body = [ln.removeprefix("      | ") for ln in text.splitlines() if ln.startswith("      | ")]
    assert "\n".join(body) + "\n" == _captured_config(1)  # port 8888 -> master on 20888
    assert (f"mount {{launch_dir}}/{launch_name('results/mooncake_config.json')} -> "
            "/workspace/results/mooncake_config.json (read-only)") in text
    assert "env MOONCAKE_CONFIG_PATH=/workspace/results/mooncake_config.json" in text
    assert "image: vllm/vllm-openai:nightly-dev-x86_64-cu13.0.1-5894fdf" in text
    assert "container: docker, working dir /launch" in text
    assert "--host 127.0.0.1" in text  # the sweep's bind address, not upstream's 0.0.0.0
    for line in ("client seed: 42", "client dataset.id: semianalysisai/cc-traces-weka-062126",
                 "client duration_s: 3600.0", "client max_failed_share:",
                 "helper mooncake_master (daemon, port 20888)"):
        assert line in text, line
    # the same rendering as `catalog show --json`, host aside
    recipe = yaml.safe_load((ROOT / "recipes/recipe" / f"{KEY}.yaml").read_text())
    [ln] = render_launches(compose_recipe(recipe, ["row_concurrency=[1]"]), host=None)
    assert "    server argv: " + " ".join(ln["argv"]).split(" --attention-config")[0] in text



@pytest.mark.slow  # one CLI composition of a shipped recipe
def test_dry_run_json_is_the_machine_form_of_the_same_launches(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "harness.cli.main", "sweep", f"recipe={KEY}",
                        "row_concurrency=[1]", f"results_dir={tmp_path / 'r'}", "--dry-run",
                        "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    [ln] = json.loads(p.stdout)["launches"]
    assert ln["files"][launch_name("results/mooncake_config.json")] == _captured_config(1)
    assert "--host" in ln["argv"] and not (tmp_path / "r").exists()

def test_the_adapter_writes_and_mounts_the_files_for_its_port() -> None:
    recipe = yaml.safe_load((ROOT / "recipes/recipe" / f"{KEY}.yaml").read_text())
    sc = compose_recipe(recipe, ["row_concurrency=[4]", "concurrency=[4]"])
    from harness.config.launches import launches

    [one] = launches(sc)
    plan = make_adapter(one.sc).launch_plan(9000, 4)
    name = launch_name("results/mooncake_config.json")
    assert json.loads(plan.files[name]) == {
        **json.loads(_captured_config(4)), "master_server_address": "127.0.0.1:21000"}
    i = plan.argv.index(f"{{launch_dir}}/{name}:/workspace/results/mooncake_config.json:ro")
    assert plan.argv[i - 1] == "-v"
    assert plan.env["MOONCAKE_CONFIG_PATH"] == "/workspace/results/mooncake_config.json"


@pytest.mark.parametrize("path", ["../etc/x.json", "/workspace/results/x", "cfg.json",
                                  "results/a--b.json",
                                  "results"])
def test_a_file_outside_results_is_refused(path: str) -> None:
    recipe = yaml.safe_load((ROOT / "recipes/recipe" / f"{KEY}.yaml").read_text())
    sc = compose_recipe(recipe, ["row_concurrency=[1]", f"engine.files={{'{path}': x}}"])
    from harness.config.launches import launches

    with pytest.raises(ConfigError, match=r"engine\.files"):
        check_workspace(launches(sc)[0].sc, lambda key: "recipe")


def test_the_launch_writes_the_file_where_its_mount_reads_it(tmp_path: Path) -> None:
    """The server process's start writes the plan's files into the launch dir before the
    command runs; the mount's host side (its {launch_dir} filled as the start fills argv) is
    that file. A stand-in command in place of `docker run` reads it."""
    from dataclasses import replace

    from harness.config.launches import launches
    from harness.engines.process import ServerProcess

    recipe = yaml.safe_load((ROOT / "recipes/recipe" / f"{KEY}.yaml").read_text())
    [one] = launches(compose_recipe(recipe, ["row_concurrency=[1]", "concurrency=[1]"]))
    plan = make_adapter(one.sc).launch_plan(8888, 1)
    [mount] = [a for a in plan.argv if a.endswith(":/workspace/results/mooncake_config.json:ro")]
    host = mount.split(":", 1)[0]
    reader = [sys.executable, "-c", "import sys; print(open(sys.argv[1]).read(), end='')", host]
    launch = tmp_path / "launch"
    proc = ServerProcess(replace(plan, argv=reader), launch, tmp_path / "server.log")
    proc.start()
    assert proc.proc is not None and proc.proc.wait(30) == 0
    log = (tmp_path / "server.log").read_text()
    assert log.split("\n", 1)[1] == _captured_config(1)  # after the harness's argv line
    assert (launch / launch_name("results/mooncake_config.json")).read_text() == _captured_config(1)
