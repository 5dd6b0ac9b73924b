"""The README's contract for every `harness` subcommand, tried through the real CLI.

Bad input: exit 2, one message naming the input, the problem and the fix, no traceback.
A closed pipe (`harness acceptance list | head -1`): silent, exit 0 or 141."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import harness

CLOSED_PIPE_STATUSES = (0, 141)


def _with_closed_stdout(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with its stdout a pipe whose reader has already gone, as `| head -1` leaves
    it once head has its line: every write the command makes meets EPIPE."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli.main", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    rc = proc.wait(timeout=120)
    return subprocess.CompletedProcess(proc.args, rc, "", err)


@pytest.mark.parametrize("args", [
    ["acceptance", "list"],
    ["catalog", "show", "dsr1-fp4-b200-sglang-mtp", "--json"],
    ["metrics"],
    ["--help"],
    ["sweep", "--help"],
    ["traces", "stats", "scenarios/traces/weka-cc-traces/trace_0277.json"],
], ids=lambda a: " ".join(a[:2]))
def test_a_closed_pipe_is_silent(args: list[str]) -> None:
    r = _with_closed_stdout(*args)
    assert r.returncode in CLOSED_PIPE_STATUSES, (r.returncode, r.stderr)
    assert r.stderr == "", r.stderr


def test_a_closed_pipe_through_a_shell_pipeline() -> None:
    """What the user typed: `harness acceptance list | head -1`, under pipefail."""
    r = subprocess.run(["bash", "-o", "pipefail", "-c",
                        f"{sys.executable} -m harness.cli.main acceptance list | head -1"],
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split()[:2] == ["model", "speculator"]
    assert r.stderr == "", r.stderr
    assert r.returncode in CLOSED_PIPE_STATUSES


def test_harness_helper_still_sees_normal_output() -> None:
    r = harness("acceptance", "list")
    assert r.returncode == 0 and r.stdout.rstrip().endswith("rows")


@pytest.mark.parametrize("typed,suggested", [
    ("p99_ttf", "'p99_ttft'"), ("P99_TTFT", "'p99_ttft'"), ("median_intvt", "'median_intvty'"),
    ("tput", "_tput'"), ("ttft_p99", "'p99_ttft'")])
def test_an_unknown_metric_suggests_the_closest_names(typed: str, suggested: str) -> None:
    r = harness("metrics", typed)
    assert r.returncode == 2 and r.stdout == ""
    line, = r.stderr.splitlines()
    assert f"unknown key {typed!r}" in line and "did you mean" in line and suggested in line


def test_a_metric_with_nothing_close_points_at_the_list() -> None:
    r = harness("metrics", "zzzz")
    assert r.returncode == 2
    line, = r.stderr.splitlines()
    assert "'zzzz'" in line and "`harness metrics` lists all" in line


# Every subcommand misused: a file that is not there, an argument it does not take. The fix
# words are what each message must name besides the input (a command to run, what to give).
MISUSES = [
    ("sweep", ["sweep", "--bogus"], "--bogus"),
    ("sweep", ["sweep", "engine=nosuch"], "nosuch"),
    ("dashboard", ["dashboard", "/nope/run"], "/nope/run"),
    ("dashboard", ["dashboard"], "runs"),
    ("traces", ["traces", "stats", "/nope/t.json"], "/nope/t.json"),
    ("traces", ["traces", "stats", "--format", "xml", "t.json"], "xml"),
    ("acceptance", ["acceptance", "list", "--bogus"], "--bogus"),
    ("acceptance", ["acceptance", "import-golden", "/nope/ix"], "/nope/ix"),
    ("calibrate", ["calibrate", "--bogus"], "--bogus"),
    ("ingest-inferencex", ["ingest-inferencex", "/nope/rows.json", "--out", "/tmp/x"],
     "/nope/rows.json"),
    ("ingest-inferencex", ["ingest-inferencex", "/etc/hostname", "--out", "/tmp/x"],
     "/etc/hostname"),
    ("table", ["table", "/nope/run", "--targets", "10"], "/nope/run"),
    ("table", ["table", "/nope/run", "--targets", "ten"], "ten"),
    ("speculation", ["speculation", "/nope/run"], "/nope/run"),
    ("gate", ["gate", "--baseline", "/nope/a", "--candidate", "/nope/b"], "/nope/a"),
    ("gate", ["gate", "--baseline", "/nope/a", "--candidate", "/nope/b", "--metric", "zz"],
     "zz"),
    ("baseline", ["baseline", "/nope/run", "--to", "/tmp/never"], "/nope/run"),
    ("metrics", ["metrics", "p99_ttf"], "p99_ttf"),
    ("metrics", ["metrics", "--bogus"], "--bogus"),
    ("export", ["export", "inferencex", "/nope/run", "--out", "/tmp/never"], "/nope/run"),
    ("export", ["export", "csv", "/nope/run", "--out", "/tmp/never"], "csv"),
    ("eval", ["eval", "--bogus"], "--bogus"),
    ("eval", ["eval", "nosuchkey=1"], "nosuchkey"),
    ("check", ["check", "nosuch"], "nosuch"),
    ("check", ["check", "lossless", "--bogus"], "--bogus"),
    ("catalog", ["catalog", "show", "no-such-key"], "no-such-key"),
    ("catalog", ["catalog", "diff", "/nope/a", "/nope/b"], "/nope/a"),
    ("catalog", ["catalog", "import", "/nope/ix"], "/nope/ix"),
    (None, ["swep"], "sweep"),
]


def test_every_subcommand_has_a_misuse_case() -> None:
    from harness.cli.main import COMMANDS

    assert set(COMMANDS) <= {cmd for cmd, _, _ in MISUSES}


@pytest.mark.parametrize(("cmd", "args", "named"), MISUSES,
                         ids=[" ".join(a) for _, a, _ in MISUSES])
def test_bad_input_is_one_message_exit_2_no_traceback(cmd, args, named) -> None:
    r = harness(*args, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    heads = [x for x in lines if x.startswith("harness")]
    assert len(heads) == 1 and named in r.stderr, r.stderr
    assert len(lines) == 1, r.stderr


@pytest.mark.parametrize("args", [["sweep", "engine=nosuch"], ["eval", "nosuchkey=1"]],
                         ids=" ".join)
def test_a_config_error_is_one_line_naming_where_key_problem_and_fix(args) -> None:
    r = harness(*args, timeout=300)
    assert r.returncode == 2, r.stderr
    line, = r.stderr.splitlines()
    override, key = args[-1], args[-1].split("=")[0]
    assert line.startswith(f"harness: config error in the command-line override '{override}'")
    assert f"key {key}:" in line and "; fix: " in line


HELP_FEATURES = {
    "open-loop arrivals": "scenario.arrival=poisson scenario.request_rate=[1,2,4]",
    "goodput": "slo.ttft_ms=500 slo.tpot_ms=50",
    "the SLO search": "search.mode=slo +search.criteria.p99_ttft_ms=500 search.hi=128",
    "the engine profiler": "engine.profile=true",
}


def _help_footer() -> list[str]:
    out = harness("sweep", "--help", timeout=120).stdout
    footer = out[out.index("Most common overrides:"):]
    return [line.strip() for line in footer[:footer.index("Sweep any axis")].splitlines()[1:]]


@pytest.mark.parametrize("feature", HELP_FEATURES)
def test_sweep_help_names_a_feature_with_overrides_the_sweep_accepts(feature) -> None:
    """The footer line for each feature, typed as shown, composes and validates."""
    line, = [x for x in _help_footer() if x.startswith(HELP_FEATURES[feature] + " ")]
    overrides = line.split("   ")[0].split()
    r = harness("sweep", *overrides, "--dry-run", timeout=300)
    assert r.returncode == 0, (line, r.stderr[-1000:])
    assert "the config composes and validates" in r.stdout + r.stderr


def test_export_with_every_point_invalid_is_one_line_exit_2(tmp_path) -> None:
    """Nothing to export is bad input for `harness export` (README, exit codes): one line
    naming the run and the flag that exports the points anyway, nothing written."""
    from harness.record.results import RunDir
    from tests.publish.dashboard_fixtures import base_point

    run = RunDir.open(tmp_path, "allbad")
    for conc in (1, 2):
        run.append_point(base_point(f"c{conc}-r0-bad", "fixed", conc, 100.0, 10.0,
                                    valid=False, invalid_reasons=["client stamp error"]))
    out = tmp_path / "out"
    r = harness("export", "inferencex", str(run.root), "--out", str(out), timeout=120)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    line, = r.stderr.splitlines()
    assert line.startswith(f"harness export: every point of {run.root} is invalid (2)")
    assert "fix: " in line and "--include-invalid" in line
    assert r.stdout == "" and not out.exists()
