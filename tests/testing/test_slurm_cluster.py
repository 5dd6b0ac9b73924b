"""A real three-node Slurm cluster, one network namespace per node
(harness/testing/slurm_cluster.sh, docs/multinode.md): steps land on the nodes asked for, run
inside those nodes' namespaces, serve on the nodes' addresses, die with their job, and the job's
node list is readable after it ends."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.config.locations import repo_root
from tests.engines.multinode_fixtures import require_cluster

pytestmark = pytest.mark.slow

SCRIPT = repo_root() / "harness/testing/slurm_cluster.sh"
NODES = ["n1", "n2", "n3"]
PORT = 8701  # free by construction: n2's namespace has nothing else listening
WHERE_AM_I = "echo $(hostname) $(ip -4 -o addr show eth0)"


def _cluster_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def cluster():
    require_cluster()
    up = _cluster_script("up", str(len(NODES)))
    assert up.returncode == 0, up.stdout + up.stderr
    env = dict(line.split("=", 1) for line in _cluster_script("env").stdout.splitlines())
    addrs = " ".join(f"n{i}={env[f'N{i}_ADDR']}" for i in (1, 2, 3))
    assert f"slurm cluster up: {addrs}" in up.stdout
    yield env
    down = _cluster_script("down")
    assert down.returncode == 0, down.stdout + down.stderr
    # down leaves nothing: no namespaces, no config dir, no daemons of this cluster
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not re.search(r"^harness-(n\d+|sw)\b", namespaces, re.M), namespaces
    assert not Path(env["SLURM_CONF"]).parent.exists()
    assert not list(Path("/etc/netns").glob("harness-*"))
    routes = subprocess.run(["ip", "route", "show", f"{env['N1_ADDR'].rsplit('.', 1)[0]}.0/24"],
                            capture_output=True, text=True).stdout
    assert routes == "", routes
    assert subprocess.run(["pgrep", "-f", env["SLURM_CONF"]], capture_output=True).returncode == 1


def head_argv(env: dict[str, str], *argv: str) -> list[str]:
    """A command run in the head node's namespace with the cluster's config, as a user runs it."""
    return ["ip", "netns", "exec", env["HEAD_NS"], "env", f"SLURM_CONF={env['SLURM_CONF']}", *argv]


def in_head(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(head_argv(env, *argv), capture_output=True, text=True, timeout=30)


def step_processes(env: dict[str, str]) -> list[str]:
    """Every process inside the node namespaces that is not one of the cluster's daemons."""
    left = []
    for ns in env["NODE_NAMESPACES"].split(","):
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
        for pid in pids.split():
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except FileNotFoundError:
                continue
            if comm not in ("hs-slurmctld", "hs-slurmd", "slurmscriptd"):
                left.append(f"{ns}:{pid}:{comm}")
    return left


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_one_step_on_three_nodes_runs_in_each_nodes_namespace(cluster) -> None:
    r = in_head(cluster, "srun", "-N3", "-l", "sh", "-c", WHERE_AM_I)
    assert r.returncode == 0, r.stdout + r.stderr
    seen = {}
    for line in r.stdout.splitlines():
        _rank, host, rest = line.split(" ", 2)
        seen[host] = re.search(r"inet (\S+)/24", rest).group(1)
    assert seen == {f"n{i}": cluster[f"N{i}_ADDR"] for i in (1, 2, 3)}


def test_steps_on_a_named_node_share_it_serve_there_and_die_with_their_job(cluster) -> None:
    job = in_head(cluster, "sbatch", "--parsable", "-N3", "-o", "/dev/null", "--wrap", "sleep 300")
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip().split(";")[0]
    state = lambda: in_head(cluster, "squeue", "-h", "-j", job_id, "-o", "%T").stdout.strip()  # noqa: E731
    wait_for(lambda: state() == "RUNNING", 20, f"job {job_id} to run")
    on = ["srun", "--jobid", job_id, "--overlap", "-N1", "-n1", "-w", "n2"]

    placed = in_head(cluster, *on, "sh", "-c", WHERE_AM_I)
    assert placed.returncode == 0, placed.stderr
    assert placed.stdout.split()[0] == "n2"
    assert f"inet {cluster['N2_ADDR']}/24" in placed.stdout

    # A server started by a step on n2, bound to n2's address, answers a client in the head node.
    server = ("import http.server, socket\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        body = socket.gethostname().encode()\n"
              "        self.send_response(200); self.end_headers(); self.wfile.write(body)\n"
              f"http.server.HTTPServer(('{cluster['N2_ADDR']}', {PORT}), H).serve_forever()\n")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    steps = [subprocess.Popen(head_argv(cluster, *on, sys.executable, "-c", server), **quiet)]
    steps += [subprocess.Popen(head_argv(cluster, *on, "sleep", "300"), **quiet) for _ in range(2)]
    try:
        url = f"http://{cluster['N2_ADDR']}:{PORT}/"

        def served() -> str:
            got = in_head(cluster, "curl", "-sS", "--noproxy", "*", "-m", "2", url)
            return got.stdout if got.returncode == 0 else ""

        assert wait_for(served, 20, f"{url} from the head node") == "n2"
        # three steps share n2's one allocated CPU (--overlap), all at once
        def steps_on_n2() -> list[str]:
            listed = in_head(cluster, "squeue", "-h", "-s", "-j", job_id, "-o", "%i %N").stdout
            return [line for line in listed.splitlines() if line.endswith(" n2")]

        wait_for(lambda: len(steps_on_n2()) == 3, 10, "3 steps on n2 at once")
        on_n2 = [p for p in step_processes(cluster) if p.startswith("harness-n2:")]
        commands = sorted(p.rsplit(":", 1)[1] for p in on_n2 if not p.endswith(":slurmstepd"))
        assert commands == sorted([Path(sys.executable).name, "sleep", "sleep"]), on_n2

        assert in_head(cluster, "scancel", job_id).returncode == 0
        wait_for(lambda: not step_processes(cluster), 15, "no step process left in the namespaces")
        for s in steps:
            s.wait(timeout=15)
    finally:
        for s in steps:
            if s.poll() is None:
                s.kill()

    # After the end: the job's node list from slurmctld and from the job-completion file,
    # and the placed steps' node from slurmctld's log.
    shown = in_head(cluster, "scontrol", "show", "job", job_id).stdout.split()
    assert "JobState=CANCELLED" in shown and "NodeList=n[1-3]" in shown
    state_dir = Path(cluster["SLURM_CONF"]).parent
    completed = [line for line in (state_dir / "jobcomp.txt").read_text().splitlines()
                 if line.startswith(f"JobId={job_id} ")]
    assert len(completed) == 1 and "NodeList=n[1-3]" in completed[0].split()
    assert "JobState=CANCELLED" in completed[0].split()
    log = (state_dir / "log" / "slurmctld.log").read_text()
    step_nodes = re.findall(rf"_slurm_rpc_job_step_create: JobId={job_id} StepId=\d+ (\S+)", log)
    assert step_nodes.count("n2") >= 4, step_nodes
