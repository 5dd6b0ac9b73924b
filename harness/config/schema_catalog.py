"""Schemas of what InferenceX's catalog launches beside the server command: KV
offload, helper processes, setup steps run in the image, disaggregated pools. Re-exported by
harness.config.schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from harness.config.fields import about, setting


@dataclass
class KvOffloadConfig:
    """KV cache offloaded past GPU memory (InferenceX `kv-offloading` / `kv-offload-backend`
    / `dram-utilization`, configs/*-master.yaml@843c6254). The adapter renders the backend's
    flags as upstream's agentic scripts spell them (harness/engines/kv_offload.py)."""

    backend: str = setting(
        "none", help="KV offload backend: none, vllm-simple, lmcache, mooncake, hicache or "
        "native (TensorRT-LLM's host cache)")
    version: str | None = setting(
        None, help="the backend's package version upstream pins; null: none")
    dram_gb_per_rank: float = setting(
        0.0, help="host DRAM (GB) each GPU rank may fill (upstream: the total / GPUs)")
    config: dict[str, Any] = field(default_factory=dict, metadata=about(
        "merged over the backend's own config"))


@dataclass
class HelperProcess:
    """A process started with the engine (a router in front of it, a KV store daemon), from
    an argv list: placeholders {port} (the job's port), {port+N}, {host}, {tp}, {dp},
    {launch_dir}. Started after the engine is ready (a router) or before it (a daemon)."""

    name: str = MISSING  # e.g. vllm-router, sglang-router, mooncake_master
    role: str = "router"  # router (after the engine, in front of it) | daemon (before it)
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    port_offset: int = 0  # it listens on the job's port + this (a router in front: 0)
    health_path: str | None = None  # GET answered 200 when ready; None: the port accepting
    fronts: bool = False  # the client's traffic goes through it (the engine then sits behind)


@dataclass
class SetupStep:
    """A job-time step run inside the image before the server (InferenceX scripts' `pip
    install`, `sed -i` patches, patch scripts), as an argv list, never a shell string."""

    kind: str = "command"  # install | patch | command (what it is for; all run the same way)
    argv: list[str] = field(default_factory=list)
    description: str = ""


@dataclass
class PoolConfig:
    """One disaggregated pool of a multi-node key (InferenceX `prefill:` / `decode:`)."""

    workers: int = 1
    tp: int = 1
    ep: int = 1
    dp_attention: bool = False
    pp: int = 1
    dcp: int = 1
    pcp: int = 1

    def gpus(self) -> int:
        return self.workers * self.tp * self.pp * self.pcp


@dataclass
class InstancePlacement:
    """Where upstream places one instance of a role: allocation node indexes (0 is the head
    node) and, per step, the GPUs it uses (srtctl's own placement)."""

    nodes: list[int] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # per step, e.g. "0,1,2,3" -> {devices}


@dataclass
class ContainerOptions:
    """How upstream starts a role's container beyond its image and environment: the options
    of upstream's own `docker run` (benchmarks/multi_node/amd_utils/job.slurm@843c6254) or
    `srun --container-*` (pyxis). Devices and mounts typed, the rest as upstream's flags."""

    runtime: str = "docker"  # the runtime upstream's flags are for: docker | pyxis
    devices: list[str] = field(default_factory=list)  # --device values, host[:container[:rwm]]
    # host:container[:ro]; a host side may be a placeholder ({model}, {launch_dir})
    mounts: list[str] = field(default_factory=list)
    # every other flag as upstream passes it, e.g. ["--privileged", "--ipc", "host"]
    options: list[str] = field(default_factory=list)


@dataclass
class RoleLaunch:
    """One role of a multi-node deployment as upstream launches it (docs/multinode.md): its
    argv, environment and files with placeholders the launcher fills per instance and node
    ({model} {served_name} {host} {head} {leader} {node_rank} {instance} {port}
    {launch_dir})."""

    name: str = MISSING  # unique in its deployment, e.g. prefill, decode, frontend
    # frontend | router | prefill | decode | aggregated | etcd | nats | mooncake-master | helper
    role: str = MISSING
    instances: int = 1  # copies of this role (upstream's num-worker)
    nodes: int = 1  # nodes each instance spans
    gpus: int = 0  # GPUs each instance uses, over all its nodes
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # written into the launch dir first
    port: int | None = None  # the HTTP port it serves (frontend, router); None: none
    ready: str | None = None  # an HTTP path answering 200 once it is ready; None: none
    # Upstream's own placement, one entry per instance; empty: the launcher places it
    placement: list[InstancePlacement] = field(default_factory=list)
    procs_per_node: int = 1  # processes each node of an instance runs: a step per process
    # {vary_N}: text that differs per step, [instance][step] (ports, data-parallel ranks);
    # an argv element that renders to "" is left out
    vary: dict[str, Any] = field(default_factory=dict)
    # Shell text upstream runs in the container before argv (srtctl's dynamo install, setup
    # scripts): written to a file in the launch dir and sourced, never built from config
    preamble: str | None = None
    env_unset: list[str] = field(default_factory=list)  # removed from the step's environment
    # srun's options as upstream passes them: mpi, ntasks_per_node (one srun over the
    # instance's nodes, argv run by every task), srun_options {name: value}
    srun: dict[str, Any] = field(default_factory=dict)
    image: str | None = None  # this role's image, when not the deployment's
    # upstream's container options (docker run's devices, mounts, flags): applied where
    # engine.slurm.container_runtime is docker; None: upstream sets none beyond the image
    container: ContainerOptions | None = None


@dataclass
class Deployment:
    """A search-space row's multi-node launch, captured from upstream's own files."""

    source: str = ""  # what generated it: repository@commit, path, the command that ran
    # the acceptance length upstream's runners/inject_synthetic_acceptance.py forced on the
    # workers' drafts (the row's SYNTHETIC_ACCEPTANCE_LENGTH); None: they draft for real
    synthetic_acceptance_length: float | None = None
    image: str | None = None  # the workers' container image
    gpus_per_node: int = 0  # GPUs per node in upstream's cluster
    nodes: int = 0  # nodes the whole allocation takes upstream
    roles: list[RoleLaunch] = field(default_factory=list)


@dataclass
class SlurmLaunchConfig:
    """How engine=multinode runs a deployment on a Slurm cluster (docs/multinode.md)."""

    partition: str | None = setting(
        None, help="salloc --partition; null: the cluster's default")
    account: str | None = setting(None, help="salloc --account; null: the user's default")
    time_limit: str = setting(
        "04:00:00", help="salloc --time of the allocation the harness makes")
    nodelist: list[str] = field(default_factory=list, metadata=about(
        "nodes to allocate from, in placement order (salloc --nodelist); []: Slurm chooses"))
    container_runtime: str = setting(
        "pyxis", help="how a role's step runs its image: pyxis (srun --container-image, "
        "srt-slurm's), apptainer, docker (docker run in the step with the role's upstream "
        "devices, mounts and flags: the AMD keys'), or none (argv on the node)")
    container_mounts: list[str] = field(default_factory=list, metadata=about(
        "host:container mounts, e.g. the model store"))
    # Dynamo's own mocker: same registration and disaggregation (docs/multinode.md)
    worker_stand_in: str | None = setting(
        None, help="a GPU-free stand-in for the GPU workers: dynamo-mocker; null: upstream's "
        "argv")
    stand_in_python: str = setting(
        ".venv-dynamo/bin/python", help="the interpreter with ai-dynamo that runs the stand-in")
    stand_in_model: str | None = setting(
        None, help="a local tokenizer/config directory the stand-in loads")
    # the client's wake-ups preempt them, as engine.nice does for the embedded engine
    stand_in_nice: int | None = setting(
        10, help="the stand-in's niceness where it shares the client's host; null: unchanged")
    # a stand-in run on a small cluster
    max_nodes: int = setting(
        0, help="pack an instance's nodes onto at most this many cluster nodes; 0: as upstream")
    discovery_dir: str | None = setting(
        None, help="the stand-in's file discovery, shared by every node; null: the launch dir")


@dataclass
class SearchRow:
    """One row of a catalog recipe's search space: a topology and the concurrencies it serves
    (InferenceX `configs/*-master.yaml` search-space entries)."""

    tp: int = 1
    ep: int = 1
    dp_attention: bool = False
    pp: int = 1
    concurrency: list[int] = field(default_factory=list)
    speculator_k: int | None = None  # this row's draft length, when it differs from the recipe's
    extra_args: list[str] = field(default_factory=list)  # appended to engine.extra_args
    env: dict[str, str] = field(default_factory=dict)  # added to engine.env
    # merged over engine.extra_options (TensorRT-LLM's YAML), key by key at every depth: the
    # values an upstream script computes per job (cuda_graph_config.max_batch_size = CONC)
    extra_options: dict[str, Any] = field(default_factory=dict)
    pcp: int = 1  # prefill context parallel size (InferenceX pcp-size)
    dcp: int = 1  # decode context parallel size (InferenceX dcp-size)
    # speculation on this row: None = the recipe's speculator; false = off (InferenceX
    # `spec-decoding: none` beside mtp rows of one key)
    spec_decoding: bool | None = None
    kv_offload: KvOffloadConfig | None = None  # replaces engine.kv_offload on this row
    helpers: list[HelperProcess] | None = None  # replaces engine.helpers on this row
    setup: list[SetupStep] | None = None  # replaces engine.setup on this row
    files: dict[str, str] | None = None  # merged over engine.files on this row
    port_offset: int | None = None  # replaces engine.port_offset (a router fronting this row)
    correlation_headers: list[str] | None = None  # replaces scenario.correlation_headers
    scenario: str | None = None  # the scenario this row belongs to; must be the recipe's
    # Multi-node (attach) rows: the pools and the srt-slurm recipe that deploys them
    prefill: PoolConfig | None = None
    decode: PoolConfig | None = None
    deploy_recipe: str | None = None  # e.g. recipes/trtllm/b200-fp4/8k1k/mtp/ctx1_gen1_...yaml
    deployment: Deployment | None = None  # its per-role launch (engine=multinode)
    # a multi-node row without `deployment`: why the importer did not capture it
    # (recipes/recipe/multinode/IMPORT_REPORT.md), for the error engine=multinode gives
    not_captured: str | None = None
