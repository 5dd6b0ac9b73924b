"""The engine adapter interface: a recipe in, an argument list and environment out.

Each engine module (llamacpp, vllm, sglang, trtllm, endpoint) subclasses `EngineAdapter`. An
adapter never builds a shell string: `LaunchPlan.argv` goes straight to `subprocess.Popen`.
The shared lifecycle (free port, start, readiness, log, stop) lives in `process.py`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.errors import ConfigError
from harness.config.schema import EngineConfig, SweepConfig
from harness.config.validate import gpus_of
from harness.engines.counters import EngineCounters
from harness.engines.engine_counters import counters_of
from harness.engines.hints import EngineHints
from harness.engines.profiler import ProfilerEndpoints
from harness.engines.template import (
    check_template,
    flag_value,
    has_flag,
    render,
    template_values,
)
from harness.engines.weights import CONTAINER_HUB_CACHE, hub_cache
from harness.speculation.acceptance import AcceptancePlan, synthetic_rates


class EngineConfigError(ValueError):
    """A recipe this engine cannot run (raised before launch)."""


LAUNCH_DIR = "{launch_dir}"  # in argv: replaced by the launch directory when the server starts


@dataclass
class LaunchPlan:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the harness's environment
    files: dict[str, str] = field(default_factory=dict)  # written to the launch dir first
    port: int = 0
    ready_paths: tuple[str, ...] = ("/health", "/v1/models")
    # Cores the engine process is pinned to (a CPU engine beside the client,
    # harness/engines/cpu_split.py); the client then keeps the others. None: not pinned.
    cpus: tuple[int, ...] | None = None
    # Niceness the engine process starts with (a CPU engine sharing cores with the client); None:
    # the harness's own.
    nice: int | None = None


# engine.* settings every adapter honours: which adapter, which speculators it may run, a
# version the running server must report (checked when it is identified), injection allowed
# (profile and reset_cache_before_point: harness/engines/profiler.py applies them or refuses
# them for an engine without the endpoints, before anything starts)
CHECKS_ONLY = ("kind", "version", "speculators", "can_inject_acceptance", "startup_timeout_s",
               "profile", "reset_cache_before_point")
# ...and those a launched engine's command, environment or container carry
# (helpers and port_offset: started and placed by harness/engines/session.py; setup: run in the
# image before the server, containerize; kv_offload: harness/engines/kv_offload.py, or carried by
# an upstream command that spells its own offload flags)
LAUNCH_SETTINGS = ("extra_args", "env", "image", "container_runtime", "python", "argv_template",
                   "host", "helpers", "port_offset", "setup", "kv_offload", "workspace",
                   "files")
# an attached server: nothing is launched, so nothing about a launch applies
# (can_inject_acceptance: the attached server was started with its own injection knob set,
# and the harness verifies the AL it realises: the InferenceX attach path)
ENDPOINT_SETTINGS = frozenset({"kind", "version", "speculators", "startup_timeout_s", "url",
                               "api_key_env", "family", "metrics_url", "deployment",
                               "can_inject_acceptance", "profile", "reset_cache_before_point"})
_UNUSED_FIX = {
    ("", "url"): "remove engine.url, or use engine=endpoint to attach to a running server",
    ("", "api_key_env"): "remove engine.api_key_env: a launched engine is started without a "
                         "key (engine=endpoint attaches to a server that needs one)",
    ("", "family"): "remove engine.family: it names the engine behind an engine=endpoint URL",
    ("", "threads"): "remove engine.threads: it sets CPU compute threads (llamacpp, vllm on "
                     "the CPU); set the engine's own thread flag in engine.extra_args",
    ("", "cpu_affinity"): "remove engine.cpu_affinity: only the embedded llama.cpp is pinned to "
                          "its cores (harness/engines/cpu_split.py)",
    ("", "nice"): "remove engine.nice: only the embedded llama.cpp is started at a lower "
                  "priority than the client (vLLM on the CPU keeps a core for it: "
                  "engine.threads)",
    ("", "extra_options"): "remove engine.extra_options: it is TensorRT-LLM's extra-options "
                           "YAML; pass this engine's flags in engine.extra_args",
    ("", "host"): "name {host} in engine.argv_template where the server takes its address, "
                  "or remove engine.host",
    ("", "python"): "name {python} in engine.argv_template, or remove engine.python",
    ("", "container_runtime"): "set engine.image too, or remove engine.container_runtime",
    ("trtllm", "python"): "trtllm-serve runs from PATH (or engine.image): remove engine.python, "
                          "or name {python} in engine.argv_template",
    ("llamacpp", "image"): "the embedded llama.cpp runs from the xllamacpp wheel in this "
                           "environment: remove engine.image (engine=vllm, sglang, trtllm and "
                           "atom run in images)",
    ("llamacpp", "argv_template"): "the embedded llama.cpp has no command line: remove "
                                   "engine.argv_template (engine.extra_args maps llama-server "
                                   "flags onto its parameters)",
    ("endpoint", "can_inject_acceptance"): "an attached server's acceptance cannot be injected "
                                           "by the harness: remove it, and set the server's "
                                           "own knob when you start it",
}
for _name in (*LAUNCH_SETTINGS, "threads", "cpu_affinity", "nice", "extra_options"):
    _UNUSED_FIX.setdefault(("endpoint", _name),
                           f"remove engine.{_name}: engine=endpoint attaches to a server that "
                           "is already running, so nothing is launched; set it on that server")


class EngineAdapter(ABC):
    """Built whole from the recipe, the acceptance plan and the workload's hints, then never
    changed: everything a launch, a request body or a point's engine facts need is fixed at
    construction, after `validate` has refused recipes this engine cannot run."""

    kind: str = ""
    keep_alive: bool = True  # False: the server closes connections after each stream
    # A launch that may read upstream's checkout (engine.workspace) is checked for one first
    reads_workspace: bool = True
    # The engine.* settings this adapter applies to the server it launches; any other set to
    # a value other than its default is refused (check_settings), never recorded unapplied.
    # With engine.argv_template, host and python are applied where the template names them.
    applies: frozenset[str] = frozenset({*CHECKS_ONLY, *LAUNCH_SETTINGS})
    # Its server argv can ask for non-greedy drafts (vLLM's speculative-config); others draft
    # greedily, so a probabilistic speculator.sample_method is refused unless injected.
    samples_drafts = False
    # Serves from one node: a topology over chip.gpus_per_node is refused (an attached or
    # multi-node deployment places its own GPUs).
    one_node = True
    # What its /metrics exposes (harness.engines.counter_types), read from the engine's source;
    # None: it declares none of its own (an attached or deployed engine of another family).
    metrics: EngineCounters | None = None
    # Its profiler routes and prefix-cache reset (harness.engines.profiler); None: it offers
    # none, and engine.profile / engine.reset_cache_before_point are refused before launch.
    profiler: ProfilerEndpoints | None = None
    cache_reset: str | None = None

    def __init__(self, sc: SweepConfig, acceptance: AcceptancePlan | None = None,
                 hints: EngineHints | None = None, where: Locate | None = None) -> None:
        self.check(sc, where or _default_locate)
        self.sc = sc
        self.acceptance = acceptance or AcceptancePlan("none")
        self.hints = hints or fixed_hints(sc)
        self.stream_interval  # noqa: B018 - a bad value is a ConfigError here, before launch
        self._sealed = True

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_sealed", False):
            raise AttributeError(f"{type(self).__name__} is complete once built; pass "
                                 f"{name} to its constructor")
        object.__setattr__(self, name, value)

    @classmethod
    def check(cls, sc: SweepConfig, where: Locate) -> None:
        """Every refusal before anything is built or launched: a template with unknown
        placeholders, a setting this engine would not apply, the engine's own rules."""
        check_template(sc, where)
        cls.check_settings(sc, where)
        cls.check_topology(sc, where)
        cls.validate(sc, where)

    @classmethod
    def check_topology(cls, sc: SweepConfig, where: Locate) -> None:
        """A launch that fits the node it starts on."""
        if cls.one_node and gpus_of(sc) > sc.chip.gpus_per_node:
            raise ConfigError.at(where, "topology.tp",
                                 f"tp x pp = {gpus_of(sc)} GPUs exceeds {sc.chip.name}'s "
                                 f"{sc.chip.gpus_per_node} per node",
                                 "lower tp/pp, or use a multi-node recipe")

    @classmethod
    def applied_settings(cls, sc: SweepConfig) -> frozenset[str]:
        """The engine.* fields a launch of `sc` applies (the class's list, with host and
        python where an upstream command template places them)."""
        used = set(cls.applies)
        tpl = sc.engine.argv_template
        if tpl and cls.applies != ENDPOINT_SETTINGS:
            text = " ".join([*tpl, *sc.engine.extra_args])
            for name in ("host", "python"):
                (used.add if "{" + name + "}" in text else used.discard)(name)
        if not sc.engine.image:
            used.discard("container_runtime")  # it says how an image runs; there is none
        return frozenset(used)

    @classmethod
    def check_settings(cls, sc: SweepConfig, where: Locate) -> None:
        """Refuse every engine.* setting given a non-default value that this engine would not
        apply: a run would record it (config, settings hash) while the server ran without it."""
        used = cls.applied_settings(sc)
        defaults = EngineConfig(kind=sc.engine.kind)
        for f in dataclasses.fields(EngineConfig):
            value = getattr(sc.engine, f.name)
            if f.name in used or value == getattr(defaults, f.name):
                continue
            key = f"engine.{f.name}"
            raise ConfigError.at(where, key,
                                 f"engine {sc.engine.kind} does not apply {f.name} (set to "
                                 f"{value!r}): the run would record it, the server would run "
                                 "without it", _UNUSED_FIX.get((cls.kind, f.name))
                                 or _UNUSED_FIX.get(("", f.name))
                                 or f"remove {key} (docs/settings.md, engine settings)")
        if sc.engine.container_runtime not in ("docker", "pyxis"):
            key = "engine.container_runtime"
            raise ConfigError.at(where, key,
                                 f"unknown container runtime {sc.engine.container_runtime!r}",
                                 "use docker, or pyxis inside a Slurm allocation")

    @classmethod
    def validate(cls, sc: SweepConfig, where: Locate) -> None:
        """Refuse recipes this engine cannot run (a ConfigError naming file, key and fix);
        called before anything is built or launched. Nothing to refuse by default."""
        return None

    @classmethod
    def family(cls, sc: SweepConfig) -> str | None:
        """The engine behind a point (whose profiler and reset apply): this kind itself."""
        return cls.kind

    @property
    def counters(self) -> EngineCounters:
        """What this engine's metrics endpoint exposes (tokens, prefix cache, speculative
        decoding), declared on its class: points, hit rates and calibration all read it."""
        return counters_of(self.kind)

    @property
    def can_inject(self) -> bool:
        return bool(self.sc.engine.can_inject_acceptance)

    @property
    def prefix_caching(self) -> bool:
        return self.hints.prefix_caching

    def max_running(self, max_concurrency: int) -> int:
        """Requests the engine must admit at once (AgentX: 2x, for sub-agent fan-out)."""
        return max_concurrency * self.hints.running_per_concurrency

    def synthetic_rates(self) -> list[float] | None:
        """Per-position forced acceptance rates when injecting, else None."""
        if self.acceptance.mode != "injected" or self.acceptance.length is None:
            return None
        return synthetic_rates(self.acceptance.length, self.sc.speculator.k)

    @property
    def stream_interval(self) -> int:
        """Tokens per streamed chunk the server was launched with: `--stream-interval N` in the
        recipe's command (SGLang and vLLM spell it so), else 1, both engines' default. A point
        records it, because ITL is measured per chunk (docs/metrics.md)."""
        flags = [*(self.sc.engine.argv_template or []), *self.sc.engine.extra_args]
        return positive_int(flag_value(flags, "--stream-interval"), "engine.argv_template",
                            "--stream-interval")

    @property
    def precision(self) -> str:
        return self.sc.precision or self.sc.model.default_precision

    @property
    def served_model_name(self) -> str:
        """The name requests carry: the recipe's, or under an upstream command without
        --served-model-name the checkpoint path, as that server then calls it."""
        tpl = self.sc.engine.argv_template
        if tpl and not has_flag(tpl, "--served-model-name"):
            return self.checkpoint
        m = self.sc.model
        named = flag_value(tpl, "--served-model-name") if tpl else None
        if named == "{model}":
            return self.checkpoint
        if named is not None and "{" not in named:  # upstream's literal name (an HF id)
            return named
        return m.served_name or m.name

    def templated_argv(self, port: int, max_concurrency: int,
                       extra_options: str = "") -> list[str] | None:
        """The upstream script's command for this launch (engine.argv_template), or None."""
        tpl = self.sc.engine.argv_template
        if not tpl:
            return None
        m = self.sc.model
        base = port - self.sc.engine.port_offset  # {port} is the job's; the engine's is port
        values = template_values(self.sc, self.checkpoint, m.served_name or m.name,
                                 self.python(), base, max_concurrency, extra_options)
        return render([*tpl, *self.sc.engine.extra_args], values)

    @property
    def checkpoint(self) -> str:
        m = self.sc.model
        return m.checkpoints.get(self.precision, m.hf_id)

    def python(self) -> str:
        """The interpreter that runs a Python engine: engine.python (a relative path from the
        current directory when it is there, else from the checkout or installed copy), else
        this one."""
        import sys

        from harness.config.locations import data_path

        p = self.sc.engine.python
        return str(data_path(p)) if p else sys.executable

    def containerize(self, plan: LaunchPlan) -> LaunchPlan:
        """Run the plan inside engine.image when one is set (docker; under Slurm the job's
        srun --container-image does it instead, see harness.distributed). The recipe's setup
        steps run first in the same container (harness/engines/setup_steps.py)."""
        from harness.engines.workspace import rendered_files

        # engine.files, written and mounted at /workspace: the server's container only (a
        # helper's plan carries its own ready paths)
        if self.sc.engine.files and plan.ready_paths == LaunchPlan.ready_paths:
            files = {**plan.files, **rendered_files(self, plan.port)}
            plan = dataclasses.replace(plan, files=files)
        image = self.sc.engine.image
        if not image:
            return plan
        if self.sc.engine.setup:
            from harness.engines.setup_steps import with_setup

            plan = dataclasses.replace(plan, argv=with_setup(self.sc.engine.setup, plan.argv))
        from harness.engines.workspace import docker_mounts, pyxis_mounts

        if self.sc.engine.container_runtime == "pyxis":  # inside a Slurm allocation
            mounts = f"{LAUNCH_DIR}:/launch{pyxis_mounts(self.sc, LAUNCH_DIR, plan.files)}"
            argv = ["srun", "--overlap", "--ntasks=1", f"--container-image={image}",
                    f"--container-mounts={mounts}", "--container-workdir=/launch",
                    "--export=ALL", *plan.argv]
            return LaunchPlan(argv=argv, env=plan.env, files=plan.files, port=plan.port,
                              ready_paths=plan.ready_paths)
        argv = ["docker", "run", "--rm", "--network", "host", "--ipc", "host",
                "--gpus", "all", "--shm-size", "16g"]
        for k in sorted(plan.env):
            argv += ["-e", k]  # the value comes from the environment, never the command line
        # the HF hub cache the harness's own checks read (HF_HUB_CACHE, else HF_HOME/hub, else
        # ~/.cache/huggingface/hub), at the path huggingface_hub reads inside the image
        argv += ["-v", f"{hub_cache()}:{CONTAINER_HUB_CACHE}",
                 "-v", f"{LAUNCH_DIR}:/launch", *docker_mounts(self.sc, LAUNCH_DIR, plan.files),
                 "-w", "/launch", image, *plan.argv]
        return LaunchPlan(argv=argv, env=plan.env, files=plan.files, port=plan.port,
                          ready_paths=plan.ready_paths)

    @property
    def launches(self) -> bool:
        """False for attach mode: the server is already running."""
        return True

    @abstractmethod
    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        """argv + env that serve this recipe on `port` for up to `max_concurrency` requests."""

    def request_extras(self) -> dict[str, Any]:
        """Engine-specific fields added to every request body."""
        return {}

    def version(self, server_info: dict[str, Any]) -> str:
        """The running engine's version, from what the server said (or the installed one)."""
        return str(server_info.get("version", "unknown"))

    def deployment(self, run_root: Path, launch_id: str) -> Any:
        """A deployment EngineSession starts in place of one server process (engine=multinode:
        harness/engines/multinode_deploy.py), or None for a single launch plan."""
        return None

    def context_per_request(self) -> int:
        """Tokens one request may need: the workload's longest request + margin
        (max-model-len)."""
        from harness.config.locations import CONTEXT_MARGIN

        return self.hints.longest_request_tokens + CONTEXT_MARGIN


Locate = Callable[[str], str]



def positive_int(value: object, key: str, name: str) -> int:
    """A stream interval (or similar count) from a recipe: None is the default 1; anything
    but a positive integer is a ConfigError naming the recipe key."""
    if value is None:
        return 1
    try:
        n = int(str(value))
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"the {key.split('.')[0]} recipe", key,
                          f"{name} is {value!r}, not a positive integer",
                          f"set {name} to the tokens per streamed chunk (1 streams every token)")
    return n


def _default_locate(key: str) -> str:
    return f"the {key.split('.')[0]} recipe"


def fixed_hints(sc: SweepConfig) -> EngineHints:
    """Hints for a fixed-sequence recipe (tools that build an adapter without a workload)."""
    return EngineHints(prefix_caching=False,
                       longest_request_tokens=sc.scenario.isl + sc.scenario.osl)
