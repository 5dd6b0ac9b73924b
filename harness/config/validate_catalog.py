"""Checks of what catalog recipes add to a launch (InferenceX's agentic and multi-node keys):
KV offloading, helper processes, setup steps, context parallelism, per-row scenarios and
attached deployments. Each error names the file, the key and the fix; all run before anything
starts (harness.config.validate.check_combinations calls `check_catalog`)."""

from __future__ import annotations

import string

from harness.config.errors import ConfigError, Where, did_you_mean
from harness.config.schema import SweepConfig
from harness.config.validate_scenario import check_header_names

# What upstream's masters name (configs/*-master.yaml@843c6254 `kv-offload-backend.name`);
# `none` is the `kv-offloading: none` rows.
KV_OFFLOAD_BACKENDS = ("none", "vllm-simple", "lmcache", "mooncake", "hicache", "native")
# What each launched engine's adapter renders (harness/engines/kv_offload.py); an endpoint's
# or a multi-node deployment's offload is the deployment's own (its captured flags), recorded.
DEPLOYED = ("endpoint", "multinode")
KV_OFFLOAD_BY_ENGINE = {"vllm": ("vllm-simple", "mooncake", "lmcache"), "sglang": ("hicache",),
                        "trtllm": ("native",)}
HELPER_ROLES = ("router", "daemon")
SETUP_KINDS = ("install", "patch", "command")
# Placeholders a helper's argv may name; {port+N} is the job's port plus N.
HELPER_PLACEHOLDERS = ("port", "host", "tp", "dp", "engine_port", "launch_dir", "model",
                       "served_name", "python")


def check_catalog(sc: SweepConfig, where: Where) -> None:
    check_kv_offload(sc, where)
    check_helpers(sc, where)
    check_setup(sc, where)


def check_kv_offload(sc: SweepConfig, where: Where) -> None:
    kv = sc.engine.kv_offload
    if kv.backend not in KV_OFFLOAD_BACKENDS:
        key = "engine.kv_offload.backend"
        hint = did_you_mean(kv.backend, KV_OFFLOAD_BACKENDS)
        raise ConfigError.at(where, key, f"unknown KV offload backend {kv.backend!r}",
                             f"use one of {', '.join(KV_OFFLOAD_BACKENDS)}"
                             + (f"; {hint}" if hint else ""))
    kind = sc.engine.kind
    own = kind not in DEPLOYED and not sc.engine.argv_template  # else upstream's command has it
    if kv.backend != "none" and own and kv.backend not in KV_OFFLOAD_BY_ENGINE.get(kind, ()):
        key = "engine.kv_offload.backend"
        raise ConfigError.at(where, key, f"engine {kind} cannot offload KV to {kv.backend!r}",
                             f"use one of {KV_OFFLOAD_BY_ENGINE.get(kind, ('none',))} for {kind}")
    if kv.backend != "none" and kv.dram_gb_per_rank <= 0 and kind not in DEPLOYED:
        key = "engine.kv_offload.dram_gb_per_rank"
        raise ConfigError.at(where, key,
                             f"KV offload to {kv.backend} needs a host DRAM budget per GPU rank, "
                             f"got {kv.dram_gb_per_rank:g}",
                             "set it in GB (InferenceX: dram-utilization x host DRAM / GPUs)")
    if kv.backend == "none" and kv.dram_gb_per_rank > 0:
        key = "engine.kv_offload.dram_gb_per_rank"
        raise ConfigError.at(where, key, "a DRAM budget without an offload backend",
                             "set engine.kv_offload.backend, or the budget to 0")


def _names(arg: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(arg) if f is not None]


def check_helpers(sc: SweepConfig, where: Where) -> None:
    seen: set[str] = set()
    fronts = 0
    for i, h in enumerate(sc.engine.helpers):
        key = f"engine.helpers[{i}]"
        if h.role not in HELPER_ROLES:
            raise ConfigError.at(where, key + ".role",
                                 f"helper {h.name!r} has role {h.role!r}",
                                 f"use one of {', '.join(HELPER_ROLES)}")
        if not h.argv:
            raise ConfigError.at(where, key + ".argv",
                                 f"helper {h.name!r} has no command",
                                 "give its argv as a list, program first")
        if h.name in seen:
            raise ConfigError.at(where, key + ".name",
                                 f"two helpers are named {h.name!r}", "name each helper once")
        seen.add(h.name)
        for arg in h.argv:
            try:
                names = _names(arg)
            except ValueError as e:
                raise ConfigError.at(where, key + ".argv", f"argument {arg!r}: {e}",
                                     "write a literal brace as {{ or }}") from None
            bad = [n for n in names if n not in HELPER_PLACEHOLDERS and not _port_plus(n)]
            if bad:
                raise ConfigError.at(where, key + ".argv",
                                     f"argument {arg!r} names {bad}",
                                     f"use only {', '.join(HELPER_PLACEHOLDERS)} or port+N")
        if h.health_path is not None and not h.health_path.startswith("/"):
            raise ConfigError.at(where, key + ".health_path",
                                 f"health path {h.health_path!r} is not a path",
                                 "start it with / (e.g. /health)")
        if h.fronts:
            fronts += 1
            if h.role != "router":
                raise ConfigError.at(where, key + ".fronts",
                                     f"daemon {h.name!r} cannot carry the client's traffic",
                                     "set role: router, or fronts: false")
            if h.port_offset == sc.engine.port_offset:
                raise ConfigError.at(where, "engine.port_offset",
                                     f"router {h.name!r} and the engine both listen on the job's "
                                     f"port + {h.port_offset}",
                                     "put the engine behind it: engine.port_offset: 1 (upstream)")
    if fronts > 1:
        raise ConfigError.at(where, "engine.helpers",
                             f"{fronts} helpers front the engine", "let one router carry traffic")


def _port_plus(name: str) -> bool:
    head, _, n = name.partition("+")
    return head == "port" and n.isdigit()


def check_setup(sc: SweepConfig, where: Where) -> None:
    for i, step in enumerate(sc.engine.setup):
        key = f"engine.setup[{i}]"
        if step.kind not in SETUP_KINDS:
            raise ConfigError.at(where, key + ".kind",
                                 f"unknown setup kind {step.kind!r}",
                                 f"use one of {', '.join(SETUP_KINDS)}")
        if not step.argv:
            raise ConfigError.at(where, key + ".argv", "a setup step with no command",
                                 "give its argv as a list, program first")
        if len(step.argv) == 1 and " " in step.argv[0]:
            raise ConfigError.at(where, key + ".argv",
                                 f"{step.argv[0]!r} is one argument with spaces, a shell string",
                                 "split it into a list: [pip, install, pkg==1.0]")
    if sc.engine.setup and sc.engine.kind not in ("endpoint",) and not sc.engine.image:
        key = "engine.setup"
        raise ConfigError.at(where, key,
                             "setup steps install into and patch an image; this engine has none",
                             "set engine.image, or drop the steps (they would change this host)")


def check_rows(sc: SweepConfig, where: Where) -> None:
    """The search space as a whole (each launch's own config has none left)."""
    named_scenarios = sorted({r.scenario for r in sc.search_space if r.scenario})
    if named_scenarios and not any(r.scenario in (None, sc.scenario.name)
                                   for r in sc.search_space):
        raise ConfigError.at(where, "search_space",
                             f"no row of this recipe is for scenario {sc.scenario.name!r}",
                             f"choose one of its scenarios: scenarios={named_scenarios[0]}"
                             + (f" (or {', '.join(named_scenarios[1:])})"
                             if len(named_scenarios) > 1 else ""))
    for i, row in enumerate(sc.search_space):
        key = f"search_space[{i}]"
        if (row.prefill is None) != (row.decode is None):
            raise ConfigError.at(where, key, "a disaggregated row needs both pools",
                                 "give prefill and decode, or neither")
        check_header_names(row.correlation_headers or [], f"{key}.correlation_headers", where)
    pools = [r for r in sc.search_space if r.prefill is not None]
    if pools and sc.engine.kind not in ("endpoint", "multinode"):
        raise ConfigError.at(where, "engine.kind",
                             "multi-node (disaggregated) rows are launched on Slurm or attached to",
                             "engine=multinode (launch the row's deployment on Slurm), or "
                             "engine=endpoint engine.url=http://... (attach)")
    want = sc.engine.deployment
    offered = sorted({c for r in sc.search_space if r.scenario in (None, sc.scenario.name)
                      and (not want or r.deploy_recipe == want) for c in r.concurrency})
    if sc.row_concurrency and not set(sc.row_concurrency) & set(offered):
        raise ConfigError.at(where, "row_concurrency",
                             f"no row chosen offers concurrency {sc.row_concurrency}",
                             f"pick from the rows' own: {offered}")
    if sc.engine.kind == "multinode":
        check_launchable(sc, want, where)
    named = sorted({r.deploy_recipe for r in sc.search_space
                    if r.deploy_recipe and r.scenario in (None, sc.scenario.name)})
    if want and want not in named:
        hint = did_you_mean(want, named)
        raise ConfigError.at(where, "engine.deployment",
                             f"no row of this recipe is deployed by {want!r}",
                             f"use one of: {', '.join(named) or '(none)'}"
                             + (f"; {hint}" if hint else ""))
    if sc.engine.kind == "endpoint" and len(named) > 1 and not want:
        raise ConfigError.at(where, "engine.deployment",
                             f"this recipe's rows are {len(named)} deployments; engine.url is one",
                             f"say which runs behind the URL: engine.deployment=<one of "
                             f"{', '.join(named[:4])}{', ...' if len(named) > 4 else ''}>")


def check_launchable(sc: SweepConfig, want: str | None, where: Where) -> None:
    """engine=multinode: every row it would run carries a captured deployment."""
    for i, row in enumerate(sc.search_space):
        if row.scenario not in (None, sc.scenario.name) or (want and row.deploy_recipe != want):
            continue
        if row.deployment is None:
            key = f"search_space[{i}].deployment"
            why = f" ({row.not_captured})" if row.not_captured else ""
            raise ConfigError.at(where, key,
                                 f"row {i} ({row.deploy_recipe or 'unnamed'}) has no captured "
                                 f"launch{why}, so engine=multinode cannot start it",
                                 "choose a row that has one (engine.deployment=<its "
                                 "deploy_recipe>; recipes/recipe/multinode/IMPORT_REPORT.md says "
                                 "which), or attach to a running deployment: engine=endpoint "
                                 "engine.url=http://...")
