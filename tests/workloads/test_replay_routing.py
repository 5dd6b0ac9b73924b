"""Routing headers that carry each agentic request's correlation id (scenario.correlation_headers,
docs/replay.md "Requests"): what SessionIds sends, how config refuses a header AIPerf cannot
add, what the catalog importer reads from upstream's client environment, and a replay through
the router emulator keeping each session stream on one DP rank."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.config.errors import ConfigError
from harness.workloads.replay_sessions import SessionIds

# ---- what a request sends --------------------------------------------------------------------


def test_routing_headers_carry_each_streams_correlation_id():
    ids = SessionIds(routing=("X-SMG-Routing-Key", "X-Session-ID"))
    root, _ = ids.request("")
    sub, _ = ids.request("agent_001")
    again, _ = ids.request("agent_001")
    assert root["X-SMG-Routing-Key"] == root["X-Session-ID"] == root["X-Correlation-ID"] \
        == ids.root
    assert sub["X-SMG-Routing-Key"] == sub["X-Session-ID"] == sub["X-Correlation-ID"] \
        == again["X-SMG-Routing-Key"] != ids.root  # a sub-agent's own, stable id


def test_routing_headers_follow_the_correlation_id_not_the_affinity_key():
    ids = SessionIds("tree", routing=("X-SMG-Routing-Key",))
    sub, _ = ids.request("agent_001")
    assert sub["X-Session-Affinity"] == ids.root  # tree affinity: the root's
    assert sub["X-SMG-Routing-Key"] == sub["X-Correlation-ID"] != ids.root  # AIPerf: its own


def test_no_routing_headers_by_default():
    headers, _ = SessionIds().request("agent_001")
    assert set(headers) == {"X-Request-ID", "X-Correlation-ID", "X-Session-Affinity"}


# ---- config -----------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides", [
    ["scenarios=agentic-weka-cpu", "scenario.correlation_headers=[X-Routing-Key]"],
    ["scenarios=agentic-weka-cpu", "scenario.correlation_headers=[x-smg-routing-key]"],
    ["scenarios=fixed-1k128", "scenario.correlation_headers=[X-Session-ID]"],
    ["scenarios=agentic-weka-cpu", "scenario.request_style=harness",
     "scenario.correlation_headers=[X-Session-ID]"],
])
def test_config_refuses_headers_a_replay_cannot_send(overrides):
    from harness.config.compose import compose_sweep
    from harness.workloads.registry import check_kinds

    with pytest.raises(ConfigError, match=r"scenario\.correlation_headers") as e:
        check_kinds(compose_sweep(overrides), lambda key: "the command line")
    assert "fix:" in str(e.value)


def test_a_catalog_rows_header_is_checked_and_replaces_the_scenarios():
    from harness.config.compose import compose_sweep
    from harness.config.launches import apply_row
    from harness.config.validate_catalog import check_rows

    sc = compose_sweep(["recipe=dsv4-fp4-b200-sglang-agentic-hicache-mtp"])
    dp = [r for r in sc.search_space if r.dp_attention]
    plain = [r for r in sc.search_space if not r.dp_attention]
    assert dp and plain
    assert all(r.correlation_headers == ["X-SMG-Routing-Key"] for r in dp)
    assert all(r.correlation_headers is None for r in plain)
    assert apply_row(sc, dp[0]).scenario.correlation_headers == ["X-SMG-Routing-Key"]
    assert apply_row(sc, plain[0]).scenario.correlation_headers == []
    bad = dataclasses.replace(dp[0], correlation_headers=["X-Routing"])
    with pytest.raises(ConfigError, match=r"search_space\[0\]\.correlation_headers"):
        check_rows(dataclasses.replace(sc, search_space=[bad]), lambda k: "recipe.yaml")


def test_the_settings_hash_leaves_the_default_out():
    from harness.config.compose import compose_sweep
    from harness.record.identity import scenario_settings_hash

    sc = compose_sweep(["scenarios=agentic-weka-cpu"])
    s = dataclasses.asdict(sc.scenario)
    assert "correlation_headers" in s  # recorded with the other replay settings
    routed = dataclasses.replace(sc, scenario=dataclasses.replace(
        sc.scenario, correlation_headers=["X-SMG-Routing-Key"]))
    assert scenario_settings_hash(routed) != scenario_settings_hash(sc)
    # at its default the field is not hashed: the digest is that of the scenario without it
    from harness.record.point_record import digest

    s.pop("description"), s.pop("request_rate"), s.pop("correlation_headers")
    for k in ("arrival", "burstiness", "max_inflight", "num_requests"):
        s.pop(k)  # every scenario's open-loop defaults, left out too
    assert scenario_settings_hash(sc) == digest(s)[:10]


# ---- the catalog importer -----------------------------------------------------------------


@pytest.mark.parametrize("env, want", [
    ({"AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID": "true"}, ["X-SMG-Routing-Key"]),
    ({"AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID": "1"}, ["X-Session-ID"]),
    ({"AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID": "false",
      "AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID": "0"}, None),
    ({}, None),
])
def test_the_importer_maps_aiperfs_routing_env(env, want):
    from harness.catalog.client_settings import client_settings

    argv = ["aiperf", "profile", "--public-dataset", "x", "--benchmark-duration", "900"]
    s, unhonoured = client_settings({"tool": "aiperf", "argv": argv, "env": env})
    assert s.get("correlation_headers") == want
    assert not [u for u in unhonoured if "CORRELATION" in u]


# ---- through a router ---------------------------------------------------------------------

_SSE = (b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n'
        b"data: [DONE]\n\n")


def _through_router(tokenizer, flavor: str, headers: tuple[str, ...]):
    """Replay two lanes through the router emulator (8 DP ranks) to a worker that answers every
    request: the ranks the router picked, by X-Request-ID, and the records."""
    from aiohttp import web

    from harness.testing.router_emulator import Router
    from harness.workloads.agentic_bodies import AgenticBodies
    from harness.workloads.replay import Replayer
    from tests.helpers import loopback_app
    from tests.workloads.test_replay import block_prompts, from_turn_0, scaled

    ranks: dict[str, int] = {}

    class Spy(Router):
        def rank(self, request: web.Request) -> int:
            r = super().rank(request)
            ranks[request.headers["X-Request-ID"]] = r
            return r

    async def worker(request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        assert flavor == "vllm" or "data_parallel_rank" in body  # sgl-router --dp-aware
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(_SSE)
        await resp.write_eof()
        return resp

    settings = from_turn_0(duration_s=1.0, api="chat", correlation_headers=headers)

    async def go():
        async with loopback_app("/v1/chat/completions", worker) as worker_url:
            runner = web.AppRunner(Spy(worker_url, flavor, 8, dp_aware=True).app())
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            try:
                async with StreamingClient(ClientSettings(
                        f"http://127.0.0.1:{runner.addresses[0][1]}")) as c:
                    bodies = AgenticBodies(block_prompts(tokenizer), {"model": "m"}, 0, "chat",
                                           max_tokens_field="max_completion_tokens")
                    return await Replayer(c, scaled("trace_0277", "trace_0026"), 2, settings,
                                          bodies, 42).run()
            finally:
                await runner.cleanup()
    records = run_async(go()).records
    assert records and all(r.ok for r in records)
    by_stream: dict[tuple[str, str], set[int]] = {}
    for r in records:
        key = (r.tags["session"], r.tags["agent"])
        by_stream.setdefault(key, set()).add(ranks[r.tags["x_request_id"]])
    return by_stream


@pytest.mark.parametrize("flavor, header", [("sglang", "X-SMG-Routing-Key"),
                                            ("vllm", "X-Session-ID")])
def test_a_routers_session_key_keeps_each_stream_on_one_rank(smollm2_tokenizer, flavor,
                                                              header):
    routed = _through_router(smollm2_tokenizer, flavor, (header,))
    assert any(len(ranks) for ranks in routed.values())
    assert all(len(ranks) == 1 for ranks in routed.values()), routed
    assert len(set().union(*routed.values())) > 1, routed  # sessions spread over the ranks
    unrouted = _through_router(smollm2_tokenizer, flavor, ())
    if flavor == "sglang":  # no key: a random rank per request, a stream's turns scattered
        assert any(len(ranks) > 1 for ranks in unrouted.values()), unrouted
    else:  # vllm-router without X-Session-ID: everything on rank 0
        assert set().union(*unrouted.values()) == {0}, unrouted
