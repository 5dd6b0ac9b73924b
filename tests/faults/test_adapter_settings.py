"""Every engine.* setting of every engine adapter is applied or refused.

For each adapter and each field of EngineConfig the test sets a distinctive value and either
finds it in what the launch would run (argv, environment, files, llama.cpp's parameters, the
readiness wait, the identified version), or expects a ConfigError naming the field. The table
AUDIT is the audit: a field added to EngineConfig without a row here fails the test.
Nothing is launched: launch plans are rendered, xllamacpp's parameters built, not served."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import yaml

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.launches import launches
from harness.config.schema import (
    Deployment,
    EngineConfig,
    HelperProcess,
    KvOffloadConfig,
    SetupStep,
    SlurmLaunchConfig,
    SweepConfig,
)
from harness.config.schema_catalog import RoleLaunch
from harness.config.validate import check_combinations
from harness.engines.registry import ENGINE_KINDS, make_adapter
from harness.speculation import acceptance

GPU = ["model=deepseek-r1", "chip=h200", "scenarios=fixed-1k1k"]
BASE = {"llamacpp": ["engine=llamacpp"], "vllm": ["engine=vllm", *GPU],
        "sglang": ["engine=sglang", *GPU], "trtllm": ["engine=trtllm", *GPU],
        "atom": ["engine=atom", *GPU],
        "endpoint": ["engine=endpoint", "engine.url=http://127.0.0.1:1"],
        # one launch of a captured multi-node row (its `deployment` as engine.launch)
        "multinode": ["recipe=multinode/dsr1-fp4-b200-dynamo-sglang", "engine=multinode",
                      "engine.deployment=recipes/b200-fp4/8k1k.yaml:override_stp_tp4"]}

# field -> the distinctive value it is set to
VALUES: dict[str, Any] = {
    "kind": None,  # the adapter itself
    "version": "9.8.7-distinct",
    "image": "registry.example/distinct:1",
    "container_runtime": "pyxis",
    "speculators": ["draft_model"],
    "can_inject_acceptance": True,
    "extra_args": ["--distinct-flag", "v"],
    "env": {"DISTINCT_ENV": "v1"},
    "startup_timeout_s": 12.5,
    "threads": 1,
    "cpu_affinity": False,
    "nice": 7,
    "workspace": "/",  # a directory that exists: the launch check reads it
    "url": "http://distinct.example:1234",
    "api_key_env": "DISTINCT_KEY_ENV",
    "family": "sglang",
    "python": "/opt/distinct/bin/python",
    "argv_template": ["distinct-serve", "--port", "{port}"],
    "host": "10.9.8.7",
    "extra_options": {"distinct_option": 7},
    # the catalog's fields
    "kv_offload": KvOffloadConfig(backend="vllm-simple", dram_gb_per_rank=12.5),
    "helpers": [HelperProcess(name="distinct-router", argv=["distinct-router", "{port+1}"])],
    "setup": [SetupStep(kind="install", argv=["pip", "install", "distinct"])],
    "port_offset": 3,
    "metrics_url": "http://distinct.example:9/metrics",
    "deployment": "distinct-deployment",
    "profile": True,
    "reset_cache_before_point": True,
    "slurm": SlurmLaunchConfig(partition="distinct-partition"),
    "launch": Deployment(source="distinct", roles=[RoleLaunch(
        name="frontend", role="frontend", argv=["distinct-frontend"], port=8000)]),
    "files": {"results/distinct.json": '{{"p": {port+2}}}'},
}
# Applied by machinery a launch plan does not show (the session starts helpers and places the
# port, setup runs in the image, the attach reads metrics_url and picks the deployment's row):
# each is checked where that machinery is tested, named here.
CHECKED_ELSEWHERE = {
    "kv_offload": "tests/config/test_kv_offload.py",
    "helpers": "tests/engines/test_engine_helpers.py",
    "setup": "tests/engines/test_engine_helpers.py",
    "port_offset": "tests/engines/test_engine_helpers.py",
    "metrics_url": "tests/catalog/test_catalog_router_attach.py",
    "deployment": "tests/catalog/test_catalog_multinode.py",
    # a deployment's allocation, placement and steps: the namespace cluster runs them
    "slurm": "tests/engines/test_multinode_launch.py",
    "launch": "tests/engines/test_multinode_launch.py",
    # written into the launch dir and mounted at its /workspace path
    "files": "tests/catalog/test_catalog_dry_run.py"}
_LAUNCHED_CATALOG = {"kv_offload": "applied", "helpers": "applied", "setup": "applied",
                     "port_offset": "applied", "metrics_url": "refused",
                     "deployment": "refused", "files": "applied"}

A, R = "applied", "refused"
# The audit: engine -> field -> applied or refused (the closing note lists it).
AUDIT: dict[str, dict[str, str]] = {
    "llamacpp": {"kind": A, "version": A, "image": R, "container_runtime": R,
                 "speculators": A, "can_inject_acceptance": A, "extra_args": A, "env": A,
                 "startup_timeout_s": A, "threads": A, "cpu_affinity": A, "url": R,
                 "api_key_env": R, "family": R, "python": A, "argv_template": R, "host": A,
                 "extra_options": R, "kv_offload": R, "helpers": R, "setup": R,
                 "port_offset": R, "metrics_url": R, "deployment": R, "files": R},
    "vllm": {"kind": A, "version": A, "image": A, "container_runtime": A, "speculators": A,
             "can_inject_acceptance": A, "extra_args": A, "env": A, "startup_timeout_s": A,
             "threads": A, "cpu_affinity": R, "url": R, "api_key_env": R, "family": R,
             "python": A, "argv_template": A, "host": A, "extra_options": R},
    "sglang": {"kind": A, "version": A, "image": A, "container_runtime": A, "speculators": A,
               "can_inject_acceptance": A, "extra_args": A, "env": A, "startup_timeout_s": A,
               "threads": R, "cpu_affinity": R, "url": R, "api_key_env": R, "family": R,
               "python": A, "argv_template": A, "host": A, "extra_options": R},
    "trtllm": {"kind": A, "version": A, "image": A, "container_runtime": A, "speculators": A,
               "can_inject_acceptance": A, "extra_args": A, "env": A, "startup_timeout_s": A,
               "threads": R, "cpu_affinity": R, "url": R, "api_key_env": R, "family": R,
               "python": R, "argv_template": A, "host": A, "extra_options": A},
    "atom": {"kind": A, "version": A, "image": A, "container_runtime": A, "speculators": A,
             "can_inject_acceptance": A, "extra_args": A, "env": A, "startup_timeout_s": A,
             "threads": R, "cpu_affinity": R, "url": R, "api_key_env": R, "family": R,
             "python": A, "argv_template": A, "host": R, "extra_options": R},
    "endpoint": {"kind": A, "version": A, "image": R, "container_runtime": R,
                 "speculators": A, "can_inject_acceptance": A, "extra_args": R, "env": R,
                 "startup_timeout_s": A, "threads": R, "cpu_affinity": R, "url": A,
                 "api_key_env": A, "family": A, "python": R, "argv_template": R, "host": R,
                 "extra_options": R},
}
for _kind in ("vllm", "sglang", "trtllm", "atom"):
    AUDIT[_kind].update(_LAUNCHED_CATALOG)
for _kind in AUDIT:  # engine.nice: only the embedded llama.cpp shares the client's cores
    AUDIT[_kind]["nice"] = A if _kind == "llamacpp" else R
    # engine.workspace: upstream's checkout, mounted in a launched engine's container
    AUDIT[_kind]["workspace"] = A if _kind in ("vllm", "sglang", "trtllm", "atom") else R
for _kind in AUDIT:  # profiler.support_problem refuses engines without the endpoints
    AUDIT[_kind].update({"profile": A, "reset_cache_before_point": A})
AUDIT["endpoint"].update({"kv_offload": R, "helpers": R, "setup": R, "port_offset": R,
                          "metrics_url": A, "deployment": A, "files": R})
# engine=multinode launches a captured deployment: its roles carry their own argv, env and
# image; the harness applies only how it runs on Slurm (harness/engines/multinode.py)
AUDIT["multinode"] = {**{name: R for name in AUDIT["endpoint"]},
                      **{name: A for name in ("kind", "version", "speculators",
                                              "can_inject_acceptance", "startup_timeout_s",
                                              "family", "deployment", "kv_offload", "profile",
                                              "reset_cache_before_point")}}
for _kind in AUDIT:  # the multi-node launch's own settings
    AUDIT[_kind].update({name: A if _kind == "multinode" else R for name in ("slurm", "launch")})
_BASES: dict[str, SweepConfig] = {}


def _base(kind: str) -> SweepConfig:
    if kind not in _BASES:
        sc = compose_sweep(BASE[kind])
        _BASES[kind] = launches(sc)[0].sc if kind == "multinode" else sc
    return _BASES[kind]


def _with(kind: str, **engine: Any) -> SweepConfig:
    sc = _base(kind)
    if "container_runtime" in engine and AUDIT[kind]["image"] == A:  # it says how one runs
        engine.setdefault("image", VALUES["image"])
    if kind == "llamacpp" and engine.get("extra_args") == VALUES["extra_args"]:
        engine["extra_args"] = ["--batch-size", "77", "--no-warmup"]  # llama-server flags
    return dataclasses.replace(sc, engine=dataclasses.replace(sc.engine, **engine))


def _render(sc: SweepConfig) -> dict[str, Any]:
    """Everything a launch would carry, as text and structure, without launching."""
    a = make_adapter(sc)
    if not a.launches or sc.engine.kind == "multinode":  # a deployment, no one launch plan
        return {"adapter": a}
    plan = a.launch_plan(8123, 4)
    out: dict[str, Any] = {"adapter": a, "argv": plan.argv, "env": plan.env,
                           "files": plan.files, "plan": plan}
    if sc.engine.kind == "llamacpp":
        from harness.engines.llamacpp_server import build_params

        cfg = json.loads(plan.argv[-1])
        out["cfg"], out["params"] = cfg, build_params(cfg)
    return out


def _applied(kind: str, name: str, value: Any, sc: SweepConfig, r: dict[str, Any]) -> None:
    argv, env = r.get("argv", []), r.get("env", {})
    if name == "image":
        assert value in argv and argv[0] in ("docker", "srun")
    elif name == "container_runtime":
        assert argv[0] == "srun" and f"--container-image={VALUES['image']}" in argv
    elif name == "extra_args" and kind == "llamacpp":
        assert r["cfg"]["params"] == {"n_batch": 77, "warmup": False}
        assert r["params"].n_batch == 77 and r["params"].warmup is False
    elif name == "extra_args":
        assert argv[-2:] == value or argv[-3:-1] == value, argv
    elif name == "env":
        assert env.get("DISTINCT_ENV") == "v1"
    elif name == "threads" and kind == "llamacpp":
        assert r["params"].cpuparams.n_threads == 1 == r["cfg"]["threads"]
    elif name == "threads":
        assert len(env["VLLM_CPU_OMP_THREADS_BIND"].split(",")) == 1
    elif name == "cpu_affinity":  # false: not pinned, where the default pins the engine
        pinned = _render(_with(kind, threads=-1))["plan"].cpus
        assert pinned and _render(_with(kind, threads=-1, cpu_affinity=False))["plan"].cpus is None
    elif name == "nice":
        assert r["plan"].nice == value
    elif name == "workspace":
        mounted = _render(_with(kind, workspace="/", image=VALUES["image"]))["plan"].argv
        assert "/:/workspace:ro" in mounted or any(":/workspace:ro" in a for a in mounted)
    elif name == "python":
        assert argv[0] == value
    elif name == "argv_template":
        assert argv[:3] == ["distinct-serve", "--port", "8123"]
    elif name == "host" and kind == "llamacpp":
        assert list(r["params"].hostnames) == [value]
    elif name == "host":
        assert value in argv
    elif name == "extra_options":
        assert yaml.safe_load(r["files"]["extra_llm_api_options.yaml"])["distinct_option"] == 7
    elif name == "url":
        assert r["adapter"].base_url == value
    elif name == "api_key_env":
        from harness.sweep.runner import client_settings

        assert client_settings(sc, True).api_key_env == value
    elif name == "family":
        from harness.engines.counters import ENGINE_COUNTERS

        assert r["adapter"].counters is ENGINE_COUNTERS["sglang"]
    else:
        raise AssertionError(f"no launch check for {name}")


NOT_IN_LAUNCH = {"kind", "version", "speculators", "can_inject_acceptance",
                 "startup_timeout_s",  # checked below, each its own way
                 # applied or refused per engine by harness/engines/profiler.py:
                 # tests/engines/test_engine_profiler.py
                 "profile", "reset_cache_before_point"}


def test_the_audit_covers_every_field_of_every_adapter() -> None:
    fields = {f.name for f in dataclasses.fields(EngineConfig)}
    assert set(AUDIT) == set(ENGINE_KINDS)
    for kind, row in AUDIT.items():
        assert set(row) == fields == set(VALUES), kind


@pytest.mark.parametrize("kind", ENGINE_KINDS)
def test_every_launch_setting_appears_in_the_launch_or_is_refused(kind: str) -> None:
    for name, verdict in AUDIT[kind].items():
        if name in NOT_IN_LAUNCH or (verdict == A and name in CHECKED_ELSEWHERE):
            continue
        sc = _with(kind, **{name: VALUES[name]})
        if verdict == R:
            with pytest.raises(ConfigError) as ei:
                make_adapter(sc)
            assert ei.value.key == f"engine.{name}", (kind, name, str(ei.value))
            assert "does not apply" in ei.value.problem and ei.value.fix, str(ei.value)
            continue
        _applied(kind, name, VALUES[name], sc, _render(sc))


def test_llamacpp_extra_args_it_cannot_apply_are_refused_naming_the_flag() -> None:
    """The reproduction: engine.extra_args=['--foo'] on the embedded engine ran without it."""
    for args, said in ((["--foo"], "'--foo'"), (["--batch-size", "x"], "needs an integer"),
                       (["--no-warmup=1"], "takes no value")):
        with pytest.raises(ConfigError) as ei:
            make_adapter(_with("llamacpp", extra_args=args))
        assert ei.value.key == "engine.extra_args" and said in ei.value.problem, str(ei.value)
        assert "--batch-size" in ei.value.fix or "write" in ei.value.fix


def test_llamacpp_threads_minus_one_leaves_the_client_a_core() -> None:
    import os

    r = _render(_with("llamacpp", threads=-1))
    assert r["params"].cpuparams.n_threads == max(1, len(os.sched_getaffinity(0)) - 1)


@pytest.mark.parametrize("kind", ENGINE_KINDS)
def test_speculators_limit_the_methods_an_engine_may_run(kind: str) -> None:
    sc = _with(kind, speculators=["draft_model"])
    sc = dataclasses.replace(sc, speculator=dataclasses.replace(sc.speculator, method="ngram",
                                                                k=3))
    with pytest.raises(ConfigError) as ei:
        check_combinations(sc, lambda key: "x")
    assert ei.value.key == "speculator.method" and "draft_model" in ei.value.fix


@pytest.mark.parametrize("kind", [k for k in ENGINE_KINDS if AUDIT[k]["can_inject_acceptance"]
                                  == A])
def test_can_inject_acceptance_decides_whether_a_point_may_inject(kind: str) -> None:
    sc = _with(kind, can_inject_acceptance=False)
    spec = dataclasses.replace(sc.speculator, method="mtp", k=2,
                               acceptance=dataclasses.replace(sc.speculator.acceptance,
                                                              mode="injected", length=2.0))
    sc = dataclasses.replace(sc, speculator=spec)
    with pytest.raises(ConfigError):
        acceptance.resolve(sc, bool(sc.engine.can_inject_acceptance), "x")
    sc = dataclasses.replace(sc, engine=dataclasses.replace(sc.engine,
                                                            can_inject_acceptance=True))
    assert acceptance.resolve(sc, True, "x").mode == "injected"


def test_endpoint_takes_can_inject_acceptance_as_the_servers_own_knob() -> None:
    """Attached, the server was started with its injection knob set; the harness verifies the
    AL it realises (the InferenceX attach path), so the setting is applied, not refused."""
    assert make_adapter(_with("endpoint", can_inject_acceptance=True)).sc.engine \
        .can_inject_acceptance


class _Stop(Exception):
    pass


@pytest.mark.parametrize("kind", ENGINE_KINDS)
def test_startup_timeout_is_the_readiness_wait(kind: str, tmp_path, monkeypatch) -> None:
    from harness.engines import session

    waited: list[float] = []

    class Proc:
        base_url = "http://127.0.0.1:1"

        def __init__(self, *a: object) -> None:
            pass

        def start(self) -> None:
            pass

        def stop(self) -> None:
            pass

        def wait_ready(self, timeout_s: float) -> None:
            waited.append(timeout_s)
            raise _Stop

    def attached(self: object, timeout_s: float) -> None:
        waited.append(timeout_s)
        raise _Stop

    def allocate(cfg: object, nodes: int, name: str, timeout_s: float) -> None:
        waited.append(timeout_s)  # a deployment waits for its allocation, then readiness
        raise _Stop

    from harness.engines import multinode_deploy

    monkeypatch.setattr(multinode_deploy, "allocate", allocate)
    monkeypatch.setattr(session, "ServerProcess", Proc)
    monkeypatch.setattr(session.EngineSession, "_wait_attached", attached)
    adapter = make_adapter(_with(kind, startup_timeout_s=12.5))
    with pytest.raises(_Stop):
        session.EngineSession(adapter, tmp_path, "x", 1).start()
    assert waited == [12.5]


def test_version_is_checked_against_what_the_server_reports() -> None:
    from harness.engines.process import EngineStartError
    from harness.engines.session import check_version

    check_version(None, "anything")
    check_version("0.32.0", "vllm 0.32.0")
    check_version("v0.5.23", "0.5.23")
    with pytest.raises(EngineStartError, match=r"engine\.version is '9\.8\.7-distinct'"):
        check_version(VALUES["version"], "xllamacpp 0.2.1 (llama.cpp abc)")
