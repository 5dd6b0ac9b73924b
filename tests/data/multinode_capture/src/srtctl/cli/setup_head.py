"""Stand-in for srtctl.cli.setup_head (test fixture)."""
import os
import shutil
import subprocess


def start_nats(binary_path, max_payload_mb=None):
    if os.path.exists("/tmp/nats"):
        shutil.rmtree("/tmp/nats")
    return subprocess.Popen([binary_path, "-js", "-sd", "/tmp/nats"])


def start_etcd(host_ip, binary_path="/configs/etcd", log_dir=None):
    return subprocess.Popen([binary_path, "--advertise-client-urls", f"http://{host_ip}:2379"])
