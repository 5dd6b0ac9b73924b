"""A real single-node Slurm cluster runs a two-job sweep through Hydra's submitit launcher."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from harness.config.locations import repo_root
from harness.record.results import read_points
from tests.helpers import harness

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slurm():
    if not shutil.which("slurmctld"):
        if os.environ.get("HARNESS_REQUIRE_SLURM"):
            pytest.fail("slurm-wlm is not installed and HARNESS_REQUIRE_SLURM is set")
        pytest.skip("slurm-wlm is not installed (CI installs it; apt-get install slurm-wlm munge)")
    r = subprocess.run(["bash", str(repo_root() / "harness/testing/slurm_local.sh")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return True


def test_two_jobs_through_slurm_write_one_run_directory(slurm, tmp_path) -> None:
    r = harness("sweep", "-m", "hydra/launcher=slurm", "hydra.launcher.cpus_per_task=2",
                "speculator=none,ngram", "concurrency=[1]", "scenario.requests_per_conc=2",
                "scenario.warmup_per_conc=1", "lossless.mode=off",  # Slurm is the subject here
                f"results_dir={tmp_path}", "run_id=slurm",
                timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    points = read_points(tmp_path / "slurm")
    assert sorted(p["spec_method"] for p in points) == ["ngram", "none"]
    assert all(p["status"] == "ok" for p in points)
    assert {p["job"] for p in points} == {"job0-fixed-128x64-llamacpp-none",
                                          "job1-fixed-128x64-llamacpp-ngram"}
    # the jobs really went through Slurm: submitit left each job's Slurm stdout
    logs = list((tmp_path / "slurm" / "hydra" / "submitit").glob("*/*_log.out"))
    assert len(logs) == 2
