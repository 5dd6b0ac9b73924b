"""Multi-node capture of what upstream deploys: a vLLM data-parallel pool counted over the GPUs
srt-slurm deploys, InferenceX's own count kept beside an agentic row, the H200 launcher's own
recipe copy, and upstream's synthetic-acceptance injection run before capture
(harness/catalog/multinode_gpus.py, multinode_synthetic.py; docs/multinode.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.config.launches import launches
from harness.config.validate import gpus_of
from tests.catalog.test_catalog_multinode import (
    ROOT,
    _check_deployment,
    _compose,
    _fixture_repos,
    _rows_with_deployments,
)
from tests.helpers import shipped_yaml

VLLM_DP_DECODE = {"num-worker": 1, "tp": 1, "ep": 2, "dp-attn": True}


def _capture_cli(ix: Path, srt: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.catalog.multinode_capture", "--inferencex", str(ix),
         "--srt-slurm", str(srt), "--out", str(out), "--commit", "HEAD",
         "--python", sys.executable], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_vllm_data_parallel_pool_is_captured_with_the_gpus_srt_slurm_deploys(
        tmp_path: Path) -> None:
    """The master row writes a vLLM data-parallel-attention decode pool with vLLM's per-rank
    tp (tp 1, ep 2); srt-slurm runs it on 2 GPUs. The row is captured, its pool counts those
    2 GPUs, and a comment above it says what the master row wrote."""
    ix, srt = _fixture_repos(tmp_path, decode=VLLM_DP_DECODE)
    out = tmp_path / "out"
    run = _capture_cli(ix, srt, out)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "1 rows captured, 0 not" in run.stdout
    [(_i, row, dep, extra)] = list(_rows_with_deployments(out / "tiny-key.yaml"))
    assert row["decode"] == {"workers": 1, "tp": 2, "ep": 2, "dp_attention": True}
    assert (row["tp"], row["ep"], row["dp_attention"]) == (2, 2, True)
    _check_deployment("fixture", row, dep, extra)
    text = (out / "tiny-key.yaml").read_text()
    assert "# row 0: the master row writes decode {num-worker: 1, tp: 1, ep: 2, dp-attn: " \
           "true}, which srt-slurm runs as 1 x 2 GPUs: read as tp 2" in text
    report = (out / "IMPORT_REPORT.md").read_text()
    assert "`tiny-key` row 0: the master row writes decode" in report


def test_a_recipe_taking_gpus_the_row_cannot_mean_is_still_refused(tmp_path: Path) -> None:
    """A plain tensor-parallel decode pool of 1 GPU that srt-slurm runs on 2 is not
    reinterpreted: the row is reported with both counts."""
    ix, srt = _fixture_repos(tmp_path, decode={"num-worker": 1, "tp": 1, "ep": 1,
                                               "dp-attn": False})
    out = tmp_path / "out"
    run = _capture_cli(ix, srt, out)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "0 rows captured, 1 not" in run.stdout
    [row] = shipped_yaml(out / "tiny-key.yaml")["search_space"]
    assert "deployment" not in row and row["decode"]["tp"] == 1
    assert "srt-slurm's recipe takes 4 prefill / 2 decode / 0 aggregated GPUs; the master " \
           "row's pools count 4 prefill + 1 decode" in row["not_captured"]


def test_an_agentic_row_records_the_count_inferencex_divides_by() -> None:
    """InferenceX's agentic processing counts workers x tp x pp x pcp of the master row;
    the note beside the row gives that count and the deployed one."""
    from harness.catalog.multinode_gpus import note

    pre = {"workers": 1, "tp": 1, "ep": 4, "dp_attention": True}
    dec = {"workers": 3, "tp": 4, "ep": 1, "dp_attention": False}
    dep = {"roles": [{"role": "prefill", "instances": 1, "gpus": 4},
                     {"role": "decode", "instances": 3, "gpus": 4},
                     {"role": "frontend", "instances": 1, "gpus": 0}]}
    text = note(pre, dec, dep, agentic=True)
    assert text and "divide by 1 + 12 GPUs" in text and "by the 4 + 12 deployed" in text
    assert note(pre, dec, dep, agentic=False).endswith(
        "divide by the 4 + 12 deployed too (srtctl's resources in sa-bench's result name, "
        "utils/process_result.py).")
    assert note({**pre, "tp": 4}, dec, dep, agentic=True) is None


def test_a_shipped_vllm_dp_key_is_measured_over_every_gpu_it_deploys() -> None:
    """dsv4-fp4-b200-dynamo-vllm-mtp's 1p2d row: upstream writes both pools tp 1 ep 8;
    srt-slurm runs 1 x 8 prefill and 2 x 8 decode GPUs, and per-GPU figures divide by 24."""
    key = "dsv4-fp4-b200-dynamo-vllm-mtp"
    dep = "recipes/vllm/deepseek-v4/8k1k/disagg-b200-1p2d-dep8-dep8-mtp.yaml"
    [one] = launches(_compose(key, dep))
    t = one.sc.topology
    assert (t.prefill_gpus, t.decode_gpus, gpus_of(one.sc)) == (8, 16, 24)
    path = ROOT / f"recipes/recipe/multinode/{key}.yaml"
    assert len(list(_rows_with_deployments(path))) == 5
    assert "# row 1: the master row writes prefill {num-worker: 1, tp: 1, ep: 8" in \
        path.read_text()


def test_the_h200_launcher_copies_the_rows_own_recipe() -> None:
    """launch_h200-dgxc-slurm.sh copies the row's CONFIG_FILE from InferenceX's
    srt-slurm-recipes over its checkout: the GLM-5.2 H200 rows, whose recipe only InferenceX
    has, are captured from it."""
    from harness.catalog.multinode_pins import pin_for

    pin = pin_for("h200-dgxc-slurm", {"framework": "dynamo-sglang", "prefix": "glm5.2",
                                      "precision": "fp8", "agentic": True}, False)
    assert pin is not None and pin.copies_config and pin.ref == "v1.0.44"
    path = ROOT / "recipes/recipe/multinode/glm5.2-fp8-h200-dynamo-sglang-agentic-mtp-2p2d.yaml"
    got = list(_rows_with_deployments(path))
    assert len(got) == 3 and all("disagg-h200-2p2d-pcp8-tp8-dp8-mtp" in d["source"]
                                 for _, _, d, _ in got)


# A stand-in for upstream's injector: appends what it was given to the recipe's decode args,
# in place, as runners/inject_synthetic_acceptance.py rewrites speculative-config.
INJECTOR = """import os, sys
from pathlib import Path
path = Path(sys.argv[1])
text = path.read_text().replace(
    'decode: ["--dp", "2"]',
    'decode: ["--dp", "2", "--synthetic=%s:%s:%s"]' % (
        os.environ["SYNTHETIC_ACCEPTANCE_LENGTH"], sys.argv[2], os.environ["MODEL_PREFIX"]))
path.write_text(text)
"""


def test_a_synthetic_acceptance_row_is_captured_with_upstreams_injection(
        tmp_path: Path) -> None:
    """A row with SYNTHETIC_ACCEPTANCE=true: InferenceX's injector runs on the recipe before
    srtctl (launch_gb200-nv.sh line 709), with the row's length, framework and model prefix,
    and the captured decode argv carries what it wrote."""
    ix, srt = _fixture_repos(tmp_path, settings=("SYNTHETIC_ACCEPTANCE=true",
                                                 "SYNTHETIC_ACCEPTANCE_LENGTH=2.49"),
                             injector=INJECTOR)
    out = tmp_path / "out"
    run = _capture_cli(ix, srt, out)
    assert run.returncode == 0, run.stderr[-2000:]
    [(_i, _row, dep, _extra)] = list(_rows_with_deployments(out / "tiny-key.yaml"))
    [decode] = [r for r in dep["roles"] if r["role"] == "decode"]
    assert "--synthetic=2.49:dynamo-vllm:dsv4" in decode["argv"]
    assert "SYNTHETIC_ACCEPTANCE_LENGTH=2.49 injected by runners/inject_synthetic_acceptance" \
        in dep["source"]
    # the length as a field, what engine=multinode's acceptance plan reads
    assert dep["synthetic_acceptance_length"] == 2.49
    [prefill] = [r for r in dep["roles"] if r["role"] == "prefill"]
    assert not any(a.startswith("--synthetic") for a in prefill["argv"])
