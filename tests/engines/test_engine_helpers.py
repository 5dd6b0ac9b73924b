"""Helper processes launched with the engine (engine.helpers, harness/engines/helpers.py and
session.py): a router in front of the engine on the job's port with the engine behind it on
{port+1} (InferenceX's agentic DP-attention rows), a daemon started before the engine, all
health-checked, traffic through the router, counters scraped from the engine behind it, and
everything stopped afterwards. Real processes on loopback: the engine emulator and the router
emulator (harness/testing/)."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import replace
from functools import cache

import pytest

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.schema import HelperProcess, SetupStep
from harness.config.validate_catalog import check_helpers, check_setup
from harness.engines.process import get_text
from harness.engines.registry import make_adapter
from harness.engines.session import EngineSession
from harness.engines.setup_steps import split_setup

ROUTER = ["{python}", "-m", "harness.testing.router_emulator", "--port", "{port}",
          "--worker-urls", "http://127.0.0.1:{engine_port}", "--prometheus-port", "{port+10000}"]


@cache
def _vllm():
    return compose_sweep(["engine=vllm", "engine.python=null"])


def _sc(**engine):
    sc = _vllm()
    return replace(sc, engine=replace(sc.engine, **engine))


def test_a_router_fronts_the_engine_and_a_daemon_starts_first(tmp_path) -> None:
    sc = _sc(argv_template=["{python}", "-m", "harness.testing.engine_emulator", "--port",
                            "{port+1}", "--engine", "vllm", "--dp", "2"],
             port_offset=1,
             helpers=[HelperProcess(name="store", role="daemon", port_offset=12000,
                                    argv=[*ROUTER[:4], "{port+12000}", *ROUTER[5:7]]),
                      HelperProcess(name="router", role="router", argv=ROUTER,
                                    health_path="/health", fronts=True)])
    session = EngineSession(make_adapter(sc), tmp_path, "l0", 4)
    with session:
        base = int(session.base_url.rsplit(":", 1)[1])
        assert session.metrics_url.endswith(f":{base + 1}")  # the engine, behind the router
        body = json.dumps({"model": "emulated", "prompt": "hi", "max_tokens": 4,
                           "stream": False}).encode()
        req = urllib.request.Request(session.base_url + "/v1/completions", body,
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
        router_metrics = get_text(f"http://127.0.0.1:{base + 10000}/metrics") or ""
        assert 'route="/v1/completions",status="200"} 1' in router_metrics
        assert "vllm:" in (get_text(session.metrics_url + "/metrics") or "")
        procs = [session.proc, *(p for _, p in session.helpers)]
        assert [role for role, _ in session.helpers] == ["daemon", "router"]
        assert all(p is not None and p.alive() for p in procs)
    assert not any(p.alive() for p in procs if p is not None)  # all stopped


def test_helper_and_setup_mistakes_are_config_errors() -> None:
    bad = _sc(helpers=[HelperProcess(name="r", role="router", argv=["x", "{prot}"])])
    with pytest.raises(ConfigError, match="prot"):
        check_helpers(bad, lambda k: "recipes/recipe/x.yaml")
    same_port = _sc(helpers=[HelperProcess(name="r", argv=["x"], fronts=True)])
    with pytest.raises(ConfigError, match="port_offset: 1"):
        check_helpers(same_port, lambda k: "recipes/recipe/x.yaml")
    shell = _sc(image="img", setup=[SetupStep(kind="install", argv=["pip install x"])])
    with pytest.raises(ConfigError, match="shell string"):
        check_setup(shell, lambda k: "recipes/recipe/x.yaml")
    no_image = _sc(setup=[SetupStep(kind="patch", argv=["sed", "-i", "s/a/b/", "f.py"])])
    with pytest.raises(ConfigError, match=r"engine\.image"):
        check_setup(no_image, lambda k: "recipes/recipe/x.yaml")


def test_setup_steps_run_inside_the_image_before_the_server() -> None:
    sc = _sc(image="vllm/vllm-openai:v1", argv_template=["vllm", "serve", "{model}"],
             setup=[SetupStep(kind="install", argv=["pip", "install", "vllm-router==0.1.14"])])
    plan = make_adapter(sc).launch_plan(8888, 4)
    inside = plan.argv[plan.argv.index("vllm/vllm-openai:v1") + 1:]
    steps, server = split_setup(inside)
    assert steps == [["pip", "install", "vllm-router==0.1.14"]]
    assert server[:2] == ["vllm", "serve"]
