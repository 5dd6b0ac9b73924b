"""Stand-in for srtctl.cli.do_sweep (test fixture): the orchestrator's stages in order."""
import json
import os
from dataclasses import dataclass
from pathlib import Path

from srtctl.core.slurm import get_hostname_ip, get_slurm_nodelist, start_srun_process


@dataclass
class Nodes:
    head: str
    infra: str
    worker: tuple


@dataclass
class RuntimeContext:
    nodes: Nodes
    log_dir: Path
    model_path: Path
    container_image: Path

    @classmethod
    def from_config(cls, config, job_id):
        nodes = get_slurm_nodelist()
        log_dir = Path(os.environ["SRTCTL_OUTPUT_DIR"]) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        return cls(Nodes(nodes[0], nodes[0], tuple(nodes)), log_dir,
                   Path(config.model_path).resolve(), Path(config.container))


@dataclass
class Process:
    node: str
    endpoint_mode: str
    endpoint_index: int
    gpu_indices: list


@dataclass
class SweepOrchestrator:
    config: object
    runtime: RuntimeContext

    def start_head_infrastructure(self, registry):
        start_srun_process(["python3", "/tmp/setup_head.py", "--name", self.config.name],
                           nodelist=[self.runtime.nodes.infra],
                           container_image=str(self.runtime.container_image))

    def start_worker(self, process, endpoint_processes):
        leader = endpoint_processes[0].node
        nodes = list(dict.fromkeys(p.node for p in endpoint_processes))
        rank = nodes.index(process.node)
        args = self.config.prefill_args if process.endpoint_mode == "prefill" \
            else self.config.decode_args
        cmd = ["python3", "-m", "dynamo.fake", "--model-path", "/model", "--served-model-name",
               "org/model", "--dist-init-addr", f"{get_hostname_ip(leader)}:8300",
               "--nnodes", str(len(nodes)), "--node-rank", str(rank),
               "--dump-config-to", f"{self.runtime.log_dir}/{process.node}_config.json", *args]
        if rank > 0:
            cmd.append("--headless")
        env = {"ETCD_ENDPOINTS": f"http://{self.runtime.nodes.infra}:2379",
               "DYN_SYSTEM_PORT": str(7500 + len(self.started)),
               "CUDA_VISIBLE_DEVICES": ",".join(map(str, process.gpu_indices))}
        self.started.append(process)
        start_srun_process(cmd, nodelist=[process.node], env_to_set=env,
                           container_image=str(self.runtime.container_image),
                           bash_preamble="pip install ai-dynamo==1.0 && "
                           f"echo ${{HOME}} > /logs/fp_{process.endpoint_mode}.json")

    def start_all_workers(self):
        w = self.runtime.nodes.worker
        prefill = [Process(w[0], "prefill", 0, [0, 1]), Process(w[1], "prefill", 0, [0, 1])]
        decode = [Process(w[2], "decode", 0, [0]), Process(w[2], "decode", 0, [1])]
        for group in (prefill, decode):
            for p in group:
                self.start_worker(p, group)

    def start_frontend(self, registry, stop_event=None):
        w = self.runtime.nodes.worker
        (self.runtime.log_dir / "router.json").write_text(json.dumps({"workers": list(w[1:])}))
        start_srun_process(["python3", "-m", "dynamo.frontend", "--http-port=8000",
                            "--router-config", "/logs/router.json"],
                           nodelist=[self.runtime.nodes.head],
                           container_image=str(self.runtime.container_image))

    def run_benchmark(self, registry, stop_event, reporter):
        return 0

    def run(self):
        self.started = []
        self.start_head_infrastructure(None)
        self.start_all_workers()
        self.start_frontend(None)
        try:
            return self.run_benchmark(None, None, None)
        except Exception:
            return 1
