"""engine=multinode: an InferenceX multi-node key launched on Slurm from its captured per-role
launch (the row's `deployment`, docs/multinode.md). Slurm is the distributed engine: one
allocation, one `srun` step per role instance and node, the client on the head node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig
from harness.engines import multinode_roles as roles
from harness.engines.base import CHECKS_ONLY, EngineAdapter, EngineConfigError, LaunchPlan, Locate
from harness.engines.counters import ENGINE_COUNTERS, EngineCounters
from harness.engines.stand_in import STAND_INS, stand_in_deployment
from harness.engines.template import flag_value
from harness.speculation.upstream_injection import deployment_length

CONTAINER_RUNTIMES = ("pyxis", "apptainer", "docker", "none")
ENTRY_ROLES = ("router", "frontend")


class MultinodeAdapter(EngineAdapter):
    kind = "multinode"
    reads_workspace = False
    one_node = False  # the captured deployment spans its own nodes
    # the captured launch, how it runs on Slurm, and the engine family behind the frontend
    # (kv_offload: recorded; the captured workers' own flags carry it)
    applies = frozenset({*CHECKS_ONLY, "slurm", "launch", "family", "deployment", "kv_offload"})

    @classmethod
    def validate(cls, sc: SweepConfig, where: Locate) -> None:
        cfg, dep = sc.engine.slurm, sc.engine.launch
        if cfg.container_runtime not in CONTAINER_RUNTIMES:
            raise ConfigError.at(where, "engine.slurm.container_runtime",
                                 f"unknown container runtime {cfg.container_runtime!r}",
                                 f"use one of {', '.join(CONTAINER_RUNTIMES)}")
        if cfg.worker_stand_in is not None and cfg.worker_stand_in not in STAND_INS:
            raise ConfigError.at(where, "engine.slurm.worker_stand_in",
                                 f"no worker stand-in {cfg.worker_stand_in!r}",
                                 f"use one of {', '.join(STAND_INS)}, or null for upstream's "
                                 "workers")
        if cfg.max_nodes < 0:
            raise ConfigError.at(where, "engine.slurm.max_nodes",
                                 f"must be >= 0, got {cfg.max_nodes}",
                                 "0 allocates as many nodes as upstream uses")
        if dep is None:  # a recipe-level check sees the rows; a launch sees its own
            if not any(r.deployment for r in sc.search_space):
                raise ConfigError.at(where, "engine.kind",
                                     "engine=multinode launches a row's captured deployment, and "
                                     "this recipe has none",
                                     "pick a recipe under recipes/recipe/multinode/ whose rows "
                                     "carry `deployment` (IMPORT_REPORT.md there lists them), or "
                                     "attach: engine=endpoint engine.url=http://HOST:PORT")
            return
        check_deployment(dep, "engine.launch", where)
        if cfg.worker_stand_in:
            stand_in_deployment(sc, dep, where)  # its own refusals (interpreter, model dir)
            check_stand_in_tokenizer(sc, where)

    @property
    def can_inject(self) -> bool:
        """Only through the deployment: a row captured with upstream's synthetic-acceptance
        injection forces its own AL (harness.speculation.upstream_injection); the harness sets
        no acceptance knob of its own on a captured launch."""
        return deployment_length(self.sc) is not None

    @property
    def counters(self) -> EngineCounters:
        """The named family's metrics (the workers' engine), else recognised per scrape."""
        return ENGINE_COUNTERS[self.sc.engine.family or "endpoint"]

    @property
    def served_model_name(self) -> str:
        """The name the workers register: their --served-model-name, else the checkpoint."""
        dep = self.sc.engine.launch
        for r in (dep.roles if dep else []):
            named = flag_value(r.argv, "--served-model-name")
            if r.role in roles.WORKER_ROLES and named and "{" not in named:
                return named
        return self.checkpoint

    def launch_plan(self, port: int, max_concurrency: int) -> LaunchPlan:
        raise EngineConfigError("engine=multinode runs a deployment, not one server process")

    def deployment(self, run_root: Path, launch_id: str) -> Any:
        """The Slurm deployment EngineSession starts in place of a server process."""
        from harness.engines.multinode_deploy import SlurmDeployment

        dep = self.sc.engine.launch
        assert dep is not None  # validate() refused a launch without one
        if self.sc.engine.slurm.worker_stand_in:
            dep = stand_in_deployment(self.sc, dep, lambda key: f"the {key} setting")
        return SlurmDeployment(self.sc, dep, run_root, launch_id, self.checkpoint,
                               self.served_model_name)

    def version(self, server_info: dict[str, Any]) -> str:
        return str(server_info.get("version") or "unknown")


def check_deployment(dep: Any, key: str, where: Locate) -> None:
    """A captured deployment the launcher can run: known roles, unique names, only the
    contract's placeholders, a frontend or router with a port."""
    names: set[str] = set()
    for i, r in enumerate(dep.roles):
        at = f"{key}.roles[{i}]"
        if r.role not in roles.ROLES:
            raise ConfigError(where(at), f"{at}.role", f"unknown role {r.role!r}",
                              f"use one of {', '.join(roles.ROLES)}")
        if r.name in names:
            raise ConfigError(where(at), f"{at}.name", f"two roles are named {r.name!r}",
                              "give each role its own name")
        names.add(r.name)
        if r.instances < 1 or r.nodes < 1 or r.gpus < 0:
            raise ConfigError.at(where, at, f"instances {r.instances}, nodes {r.nodes}, "
                                 f"gpus {r.gpus}", "instances and nodes >= 1, gpus >= 0")
        if not r.argv:
            raise ConfigError(where(at), f"{at}.argv", "a role with no command",
                              "capture the role's argv (harness.catalog.multinode_capture)")
        bad = roles.unknown_placeholders(r)
        if bad:
            raise ConfigError(where(at), f"{at}.argv",
                              f"placeholders the launcher does not fill: {bad}",
                              f"use only {', '.join('{' + p + '}' for p in roles.PLACEHOLDERS)}")
    if not any(r.port for r in dep.roles if r.role in ENTRY_ROLES or r.role in roles.WORKER_ROLES):
        raise ConfigError(where(key), f"{key}.roles",
                          "no frontend, router or serving worker with a port: nothing to send "
                          "requests to", "capture the deployment's frontend (argv and HTTP port)")


def check_stand_in_tokenizer(sc: SweepConfig, where: Locate) -> None:
    """Under a stand-in the frontend tokenizes with the stand-in's model directory, so the
    client's prompts (and its check of usage.prompt_tokens) must use the same tokenizer."""
    from harness.engines.stand_in import default_model_dir, repo_path

    cfg = sc.engine.slurm
    want = repo_path(cfg.stand_in_model) if cfg.stand_in_model else default_model_dir()
    have = sc.model.tokenizer
    if have is None or repo_path(have).resolve() != want.resolve():
        raise ConfigError.at(where, "model.tokenizer",
                             f"the stand-in's frontend tokenizes with {want}, the client with "
                             f"{have or sc.model.hf_id}: prompt lengths would not match",
                             f"set model.tokenizer={want}")
