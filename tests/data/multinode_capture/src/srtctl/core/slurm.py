"""Stand-in for srtctl.core.slurm (test fixture)."""
import os
import subprocess


def _expand_nodelist(raw):
    out = subprocess.run(["scontrol", "show", "hostnames", raw], capture_output=True, text=True)
    return out.stdout.split()


def get_slurm_nodelist():
    return _expand_nodelist(os.environ.get("SLURM_NODELIST", ""))


def get_hostname_ip(hostname, network_interface=None):
    raise RuntimeError("would ask srun for the node's address")


def start_srun_process(command, **kwargs):
    raise RuntimeError("would run srun")
