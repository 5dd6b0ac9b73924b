"""engine=multinode through the CLI on a real three-node Slurm cluster (network namespaces)
with NVIDIA Dynamo's real frontend and its mocker in place of the GPU workers: the launch, the
point's nodes and roles, and teardown on each fault (docs/multinode.md)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.record.results import read_points
from tests.engines.multinode_fixtures import (
    DYNAMO_PYTHON,
    STAND_IN_MODEL,
    cluster_script,
    head,
    head_argv,
    require_cluster_and_dynamo,
    role,
    sglang_worker,
    slurm,
    stand_in_args,
    up,
    user_recipe,
)

pytestmark = pytest.mark.slow

FRONTEND = role("frontend", "frontend", ["python3", "-m", "dynamo.frontend", "--http-port",
                                         "8000"], port=8000)
ROLES = [role("prefill", "prefill", sglang_worker("prefill"), gpus=4),
         role("decode", "decode", sglang_worker("decode"), gpus=8), FRONTEND]


@pytest.fixture(scope="module")
def cluster():
    require_cluster_and_dynamo()
    env = up()
    yield env
    r = cluster_script("down")
    assert r.returncode == 0, r.stdout + r.stderr


def _nothing_left(env: dict[str, str]) -> None:
    """No step of any job still running, no mocker or frontend process left on the host."""
    assert slurm(env, "squeue", "--steps", "--noheader").strip() == ""
    left = subprocess.run(["pgrep", "-f", "dynamo.(mocker|frontend)"], capture_output=True,
                          text=True).stdout.split()
    assert left == [], left


def test_a_disaggregated_key_runs_across_nodes_and_records_them(cluster, tmp_path) -> None:
    name = user_recipe(tmp_path / "conf", ROLES)
    r = head(cluster, "sweep", "--config-dir", str(tmp_path / "conf"), f"recipe={name}",
             *stand_in_args(tmp_path, "mn"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (p,) = read_points(tmp_path / "mn")
    assert p["status"] == "ok", p.get("invalid_reasons")
    roles = p["roles"]
    assert set(roles) == {"prefill", "decode", "frontend"}
    assert roles["prefill"]["nodes"] != roles["decode"]["nodes"]  # different nodes
    assert len(p["nodes"]) >= 2 and p["worker_stand_in"] == "dynamo-mocker"
    assert roles["prefill"]["gpus"] + roles["decode"]["gpus"] == 12 == p["gpus"]
    # Slurm's own record of the job agrees with the nodes on the point
    assert set(p["nodes"]) <= set(slurm_job_nodes(cluster, str(p["slurm_job_id"])))
    # the frontend's and each worker's own metrics were kept with the point
    saved = json.loads((tmp_path / "mn" / "server_metrics" / f"{p['point_id']}.json")
                       .read_text())["roles"]["after"]
    assert any(k.startswith("frontend") and "dynamo_frontend_requests_total" in v
               for k, v in saved.items())
    for kind in ("prefill", "decode"):
        texts = [v for k, v in saved.items() if k.startswith(kind)]
        assert texts and "dynamo_component_requests_total" in texts[0], kind
    _nothing_left(cluster)


def test_a_worker_that_never_registers_fails_the_start_naming_it(cluster, tmp_path) -> None:
    """Upstream-style argv run as written (no stand-in): a real frontend and prefill mocker,
    and a decode worker that never comes up. Exit 3 within the startup timeout, the message
    naming the role, its node and its log; nothing left running."""
    planes = ["--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]
    env = {"DYN_FILE_KV": "{launch_dir}/discovery"}
    py = str(DYNAMO_PYTHON)
    roles = [
        {**role("prefill", "prefill", [py, "-m", "dynamo.mocker", "--model-path",
                                      str(STAND_IN_MODEL), "--model-name", "m",
                                      "--disaggregation-mode", "prefill", *planes], gpus=4),
         "env": env},
        {**role("decode", "decode", ["sleep", "600"], gpus=8, port=18200), "ready": "/health"},
        {**role("frontend", "frontend", [py, "-m", "dynamo.frontend", "--http-port", "8000",
                                         "--http-host", "{host}", *planes], port=8000),
         "env": env}]
    name = user_recipe(tmp_path / "conf", roles)
    r = head(cluster, "sweep", "--config-dir", str(tmp_path / "conf"), f"recipe={name}",
             "engine.slurm.container_runtime=none", f"model.tokenizer={STAND_IN_MODEL}",
             "engine.startup_timeout_s=20", "scenario.isl=256", "scenario.osl=32",
             f"results_dir={tmp_path}", "run_id=never", timeout=300)
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-2000:]
    assert "role decode (decode.0@n" in r.stderr and "did not answer" in r.stderr, r.stderr
    assert "decode.0@n" in r.stderr and ".log" in r.stderr
    _nothing_left(cluster)


def test_a_worker_killed_mid_point_fails_that_point_and_is_torn_down(cluster, tmp_path) -> None:
    proc = _long_sweep(cluster, tmp_path, "kill")
    _kill_once_serving(cluster, "decode")
    out, _ = proc.communicate(timeout=600)
    points = read_points(tmp_path / "kill")
    assert points and points[0]["status"] == "failed", out[-3000:]
    assert "role decode" in " ".join(points[0]["invalid_reasons"])
    assert proc.returncode == 5, out[-3000:]  # every point of the run failed
    _nothing_left(cluster)


def test_scancel_of_the_job_exits_143_with_the_points_kept_line(cluster, tmp_path) -> None:
    proc = _long_sweep(cluster, tmp_path, "cancel")
    job = _serving_job(cluster)
    slurm(cluster, "scancel", job)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
    assert "rerun with run_id=cancel" in out
    _nothing_left(cluster)


def _long_sweep(env: dict[str, str], tmp_path: Path, run_id: str) -> subprocess.Popen[str]:
    """A sweep of the 1P1D recipe with long answers, running in the background."""
    name = user_recipe(tmp_path / "conf", ROLES)
    return subprocess.Popen(head_argv(env, "sweep", "--config-dir", str(tmp_path / "conf"),
                                      f"recipe={name}",
                                      *stand_in_args(tmp_path, run_id, "scenario.osl=512")),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def slurm_job_nodes(env: dict[str, str], job: str) -> list[str]:
    """The nodes Slurm's job completion log (jobcomp/filetxt) records for a job that ended."""
    log = Path(env["SLURM_CONF"]).with_name("jobcomp.txt").read_text()
    (line,) = [x for x in log.splitlines() if f"JobId={job} " in x]
    return slurm(env, "scontrol", "show", "hostnames",
                 line.split("NodeList=")[1].split()[0]).split()


def _serving_job(env: dict[str, str], timeout: float = 120) -> str:
    """The running job's id once its decode step serves requests."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        steps = slurm(env, "squeue", "--steps", "--noheader", "--format=%i %j")
        if "decode" in steps and "frontend" in steps:
            time.sleep(8)  # past readiness, into the measured requests
            return steps.split()[0].split(".")[0]
        time.sleep(0.5)
    raise AssertionError("no job started serving")


def _kill_once_serving(env: dict[str, str], kind: str) -> None:
    _serving_job(env)
    pids = subprocess.run(["pgrep", "-f", f"disaggregation-mode {kind}"], capture_output=True,
                          text=True).stdout.split()
    assert pids, f"no {kind} worker to kill"
    subprocess.run(["kill", "-9", *pids], check=True)


def test_a_shipped_key_runs_as_captured_through_its_router(cluster, tmp_path) -> None:
    """What a user runs: a shipped srt-slurm key by its catalog name, its captured row placed
    as srtctl placed it, the client going through upstream's nginx router to the frontend."""
    r = head(cluster, "sweep", "recipe=multinode/dsr1-fp4-b200-dynamo-sglang", "engine=multinode",
             "engine.deployment=recipes/b200-fp4/8k1k.yaml:override_stp_tp4",
             "row_concurrency=[4]", "scenario.prompts=filtered",
             *stand_in_args(tmp_path, "shipped"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (p,) = read_points(tmp_path / "shipped")
    assert p["status"] == "ok" and p["conc"] == 4, p.get("invalid_reasons")
    roles = p["roles"]
    assert set(roles) == {"prefill", "decode", "frontend", "router"}  # etcd, NATS left out
    assert roles["prefill"]["nodes"] == ["n1"] and roles["decode"]["nodes"] == ["n2"]
    assert roles["frontend"]["nodes"] == ["n2"] and roles["router"]["nodes"] == ["n1"]
    assert "http://10.213.7.11:8000" in r.stdout  # the client went to the router
    _nothing_left(cluster)
