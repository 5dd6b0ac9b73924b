"""What `make multinode-demo` proves, checked from the run directory and Slurm's own record:
every point valid, served by at least two nodes with prefill and decode on different nodes,
the frontend's and each worker's metrics kept with the point, and the nodes on the point among
those Slurm's job completion log names for the job.

    python -m harness.testing.multinode_check RUN_DIR SLURM_JOBCOMP_FILE [--agentic-headers]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from harness.record.results import read_points


def slurm_nodes(jobcomp: Path, job: str) -> list[str]:
    """The node list jobcomp/filetxt recorded for `job`, expanded by scontrol."""
    for line in jobcomp.read_text().splitlines():
        if f"JobId={job} " in line:
            listed = re.search(r"NodeList=(\S+)", line)
            if listed:
                return subprocess.run(["scontrol", "show", "hostnames", listed.group(1)],
                                      capture_output=True, text=True).stdout.split()
    return []


def problems(run: Path, point: dict, jobcomp: Path) -> list[str]:
    out = []
    if point.get("status") != "ok" or point.get("invalid_reasons"):
        out.append(f"not valid: {point.get('invalid_reasons')}")
    roles = point.get("roles") or {}
    if len(point.get("nodes") or []) < 2:
        out.append(f"served by {point.get('nodes')}, not two nodes or more")
    pre, dec = (set((roles.get(k) or {}).get("nodes", [])) for k in ("prefill", "decode"))
    if not pre or not dec or pre & dec:
        out.append(f"prefill on {sorted(pre)}, decode on {sorted(dec)}: not apart")
    listed = slurm_nodes(jobcomp, str(point.get("slurm_job_id")))
    if not set(point.get("nodes") or []) <= set(listed):
        out.append(f"nodes {point.get('nodes')} not among Slurm's record {listed}")
    saved = json.loads((run / "server_metrics" / f"{point['point_id']}.json").read_text())
    after = (saved.get("roles") or {}).get("after") or {}
    for kind in ("frontend", "prefill", "decode"):
        if not any(label.startswith(kind) for label in after):
            out.append(f"no {kind} metrics kept with the point")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("jobcomp", type=Path)
    args = ap.parse_args(argv)
    points = read_points(args.run_dir)
    failed = 0
    for p in points:
        found = problems(args.run_dir, p, args.jobcomp)
        failed += bool(found)
        roles = ", ".join(f"{k} x{v['count']} on {'/'.join(v['nodes'])}"
                          for k, v in (p.get("roles") or {}).items())
        print(f"{p['point_id']}: {'OK' if not found else 'FAILED'}  job {p.get('slurm_job_id')}"
              f"  nodes {','.join(p.get('nodes') or [])}  [{roles}]")
        for f in found:
            print(f"    {f}")
    print(f"{len(points) - failed} of {len(points)} points hold what the demo claims")
    return 0 if points and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
