"""Every launch of a catalog recipe rendered through its engine adapter, as data: concurrency,
topology, the server's argv, environment and files, helpers, setup steps, KV offloading and the
client's scenario settings. What `harness catalog show` prints and what
tests/catalog/test_catalog_render.py compares with upstream's captured launches.

Rendered as upstream's job would run it: on the job's `port` (InferenceX's launchers: 8888),
binding `host` (upstream: 0.0.0.0; a harness sweep binds engine.host, 127.0.0.1 by default),
without the container wrapper (the image is shown beside the command), with no injected
acceptance (the harness adds its knob only on injected points)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.catalog.client_view import client_view
from harness.config.launches import launches
from harness.config.schema import SweepConfig
from harness.config.validate import gpus_of
from harness.engines.helpers import helper_plans
from harness.engines.registry import make_adapter
from harness.engines.weights import CONTAINER_HUB_CACHE, hub_cache

UPSTREAM_PORT = 8888
UPSTREAM_HOST = "0.0.0.0"


def compose_recipe(recipe: dict[str, Any], overrides: list[str] = ()) -> SweepConfig:
    """A recipe dict (catalog_to_recipe's, or a parsed recipe file) composed and checked as
    `recipe=<it>` would be, without writing it under recipes/."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf, open_dict

    from harness.config.locations import repo_root
    from harness.config.validate import Locator, to_sweep_config

    groups = [f"{k.split('/')[-1]}={v}" for d in recipe.get("defaults", [])
              for k, v in d.items()]
    body = {k: v for k, v in recipe.items() if k != "defaults"}
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(repo_root() / "recipes"), version_base=None):
        cfg = compose("sweep", overrides=[*groups, "run_id=compose",
                                          f"hydra.searchpath=[file://{repo_root()}]"],
                      return_hydra_config=True)
    choices = dict(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    GlobalHydra.instance().clear()
    OmegaConf.set_struct(cfg, False)  # the recipe's keys are checked by to_sweep_config
    merged = OmegaConf.merge(cfg, OmegaConf.create(body),
                             OmegaConf.from_dotlist(list(overrides)))
    return to_sweep_config(merged, Locator(choices, list(overrides)))


def render_launches(sc: SweepConfig, port: int = UPSTREAM_PORT, host: str | None = UPSTREAM_HOST
                    ) -> list[dict[str, Any]]:
    """The launches as the sweep composes them: {model} is the model recipe's checkpoint for
    the recipe's precision, exactly what a sweep would load. host None: the sweep's own bind
    address (engine.host). Each launch also carries its container (image, working directory,
    mounts, the whole command the sweep runs) and every file it writes with its content."""
    out = []
    for one in launches(sc):
        s = one.sc
        topo = {k: v for k, v in dataclasses.asdict(s.topology).items() if v not in (None,)}
        item: dict[str, Any] = {
            "tag": one.tag, "concurrency": list(s.concurrency), "gpus": gpus_of(s),
            "topology": topo, "engine": s.engine.kind, "image": s.engine.image,
            "speculator": {"method": s.speculator.method, "k": s.speculator.k},
            "kv_offload": dataclasses.asdict(s.engine.kv_offload),
            "setup": [{"kind": st.kind, "argv": list(st.argv)} for st in s.engine.setup],
            "client": client_view(s),
        }
        if s.engine.kind == "endpoint":
            item["deployment"] = s.engine.deployment
            out.append(item)
            continue
        if s.engine.kind == "multinode":  # a deployment of roles, not one server process
            item["deployment"] = s.engine.deployment
            item["launch"] = dataclasses.asdict(s.engine.launch) if s.engine.launch else None
            item["slurm"] = dataclasses.asdict(s.engine.slurm)
            out.append(item)
            continue
        # upstream's bind address only where the command names one (a template without
        # {host} keeps the engine's own default, which the settings check then accepts)
        named = "{host}" in " ".join([*s.engine.argv_template, *s.engine.extra_args])
        bind = host if host is not None and named else s.engine.host
        bare = replace(s, engine=replace(s.engine, image=None, setup=[], host=bind))
        adapter = make_adapter(bare)
        plan = in_engine_paths(adapter.launch_plan(port + s.engine.port_offset,
                                                   max(s.concurrency)), bare, s,
                               adapter.checkpoint)
        t = s.topology
        values = {"host": bind, "tp": str(t.tp), "dp": str(t.tp if t.dp_attention else 1),
                  "launch_dir": "{launch_dir}", "model": adapter.checkpoint,
                  "served_name": adapter.served_model_name, "python": "python3"}
        item.update({
            "argv": plan.argv, "env": dict(sorted(plan.env.items())), "files": plan.files,
            "port": plan.port,
            "helpers": [{"name": h.name, "role": h.role, "argv": h.argv, "env": h.env,
                         "port": h.port, "health_path": h.health_path, "fronts": h.fronts}
                        for h in helper_plans(bare, port, values)],
            "container": container_view(replace(s, engine=replace(s.engine, host=bind)),
                                        port, max(s.concurrency)),
        })
        out.append(item)
    return out


def in_engine_paths(plan: Any, bare: SweepConfig, sc: SweepConfig, checkpoint: str) -> Any:
    """The plan rendered without its container, with {model_dir} as the engine in `sc`'s
    container sees it (the HF hub cache mounted at /root/.cache/huggingface/hub) rather than the
    host's cache path the container-less rendering resolves."""
    from harness.engines.weights import model_dir, names_model_dir

    if not names_model_dir(sc):
        return plan
    host, inside = model_dir(bare, checkpoint), model_dir(sc, checkpoint)
    if host == inside:
        return plan
    return replace(plan, argv=[a.replace(host, inside) for a in plan.argv],
                   env={k: v.replace(host, inside) for k, v in plan.env.items()},
                   files={k: v.replace(host, inside) for k, v in plan.files.items()})


def container_view(sc: SweepConfig, port: int, conc: int) -> dict[str, Any] | None:
    """How the sweep runs the engine's command: in engine.image (docker, or pyxis under Slurm)
    with the launch dir at /launch as the working directory, the checkout and engine.files
    mounted at /workspace, the setup steps run first; the whole argv as the sweep starts it
    ({launch_dir}: <run>/launch/<launch tag>). None: on this host, in the launch dir."""
    if not sc.engine.image:
        return None
    from harness.engines.workspace import file_mounts

    plan = make_adapter(sc).launch_plan(port + sc.engine.port_offset, conc)
    mounts = [{"host": str(hub_cache()), "container": CONTAINER_HUB_CACHE}] \
        if sc.engine.container_runtime == "docker" else []
    mounts.append({"host": "{launch_dir}", "container": "/launch"})
    if sc.engine.workspace:
        mounts += [{"host": str(Path(sc.engine.workspace).resolve()), "container": "/workspace",
                    "read_only": True},
                   {"host": "{launch_dir}/results", "container": "/workspace/results"}]
    mounts += [{"host": h, "container": c, "read_only": True}
               for h, c in file_mounts(plan.files, "{launch_dir}")]
    return {"runtime": sc.engine.container_runtime, "image": sc.engine.image,
            "workdir": "/launch", "mounts": mounts, "argv": plan.argv,
            "env_passed": sorted(plan.env)}
