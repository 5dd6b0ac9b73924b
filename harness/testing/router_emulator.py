"""A router emulator: what InferenceX puts in front of a DP-attention engine on its agentic rows
(`vllm-router` and SGLang's `sglang_router.launch_router`, benchmarks/single_node/agentic/
dsv4_fp4_b200_{vllm,sglang}_mtp.sh@843c6254), for tests of the harness through a router.

Behaviour modelled on those routers as the scripts run them:
- `/v1/completions`, `/v1/chat/completions`: forwarded to the worker (`--worker-urls`), the
  response streamed back chunk by chunk as it arrives. A DP rank is picked by hashing a
  session key and passed on as the engine reads it:
  - vllm-router (`--intra-node-data-parallel-size`, consistent_hash): the `X-Session-ID`
    header, the rank passed as the `X-data-parallel-rank` header, which vLLM's API server
    reads (vllm-project/vllm:vllm/entrypoints/openai/serving_engine.py@7ded96b3,
    `_get_data_parallel_rank`).
  - sgl-router (`--policy consistent_hashing --dp-aware`): the key is the `X-SMG-Routing-Key`
    header, else `authorization`, `x-forwarded-for` or `cookie`, else a random rank
    (sgl-project/sglang:sgl-model-gateway/src/policies/consistent_hashing.rs@11658624,
    policies/utils.rs@11658624); `--request-id-headers x-correlation-id` only names the
    request id, it does not route. Upstream's DP scripts make aiperf send the routing key
    (`AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID=true`, benchmarks/single_node/
    agentic/dsv4_fp4_b200_sglang_mtp.sh@843c6254). `--dp-aware` makes every dp rank a
    worker and the router writes the rank into the JSON body as `data_parallel_rank`
    (sgl-model-gateway/src/core/worker.rs@2893b00e, `prepare_request`), which SGLang's
    GenerateReqInput carries to its DataParallelController
    (python/sglang/srt/managers/io_struct.py@f11d231c). The real router asks the worker its
    dp size (src/core/steps/worker/local/discover_dp.rs); here both flavours take it from
    `--intra-node-data-parallel-size`.
- `/v1/models`: forwarded. `/health`: the router's own answer (200), not the worker's
  (sglang's `--disable-health-check`).
- `/metrics`: only on `--prometheus-port`, the router's own request counters; never the
  engine's (so a harness must scrape the engine behind it for acceptance, as upstream does
  with AIPERF_SERVER_METRICS_URLS).

Run: python -m harness.testing.router_emulator --port 0 --worker-urls http://127.0.0.1:N
     [--flavor sglang --dp-aware] [--intra-node-data-parallel-size 2]
Prints `PORT <n>` once it listens (harness.testing.spawn.spawn_server's convention)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random

import orjson
from aiohttp import ClientSession, ClientTimeout, web

# The headers each router hashes for session affinity, in priority order.
SESSION_HEADERS = {"vllm": ("X-Session-ID",),
                   "sglang": ("X-SMG-Routing-Key", "authorization", "x-forwarded-for", "cookie")}


class Router:
    def __init__(self, worker: str, flavor: str, dp: int, dp_aware: bool = False) -> None:
        self.worker = worker.rstrip("/")
        self.flavor = flavor
        self.dp = max(1, dp)
        self.dp_aware = dp_aware
        self.requests: dict[tuple[str, int], int] = {}
        self.ranks: dict[int, int] = {}  # requests sent to each dp rank
        self.client: ClientSession | None = None

    def rank(self, request: web.Request) -> int:
        key = next((v for h in SESSION_HEADERS[self.flavor] if (v := request.headers.get(h))),
                   "")
        if not key:  # vllm-router: rank 0; sgl-router: a random worker
            return random.randrange(self.dp) if self.flavor == "sglang" else 0
        return int(hashlib.sha256(key.encode()).hexdigest(), 16) % self.dp

    async def forward(self, request: web.Request) -> web.StreamResponse:
        assert self.client is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() in ("content-type", "authorization", "accept")}
        if request.method == "POST" and (self.flavor == "vllm" or self.dp_aware):
            rank = self.rank(request)
            self.ranks[rank] = self.ranks.get(rank, 0) + 1
            if self.flavor == "vllm":
                headers["X-data-parallel-rank"] = str(rank)
            else:
                obj = orjson.loads(body or b"null")
                if not isinstance(obj, dict):
                    return web.json_response({"error": "Request must be a JSON object for "
                                              "DP-aware routing"}, status=400)
                body = orjson.dumps({**obj, "data_parallel_rank": rank})
        async with self.client.request(request.method, self.worker + request.path,
                                       data=body or None, headers=headers) as up:
            key = (request.path, up.status)
            self.requests[key] = self.requests.get(key, 0) + 1
            out = web.StreamResponse(status=up.status, headers={
                "Content-Type": up.headers.get("Content-Type", "application/json")})
            await out.prepare(request)
            async for chunk in up.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    async def health(self, _request: web.Request) -> web.Response:
        return web.Response(text="OK")

    async def metrics(self, _request: web.Request) -> web.Response:
        name = f"{self.flavor}_router_requests_total"
        lines = [f"# HELP {name} Requests the router forwarded", f"# TYPE {name} counter"]
        lines += [f'{name}{{route="{p}",status="{s}"}} {n}'
                  for (p, s), n in sorted(self.requests.items())]
        ranks = f"{self.flavor}_router_dp_rank_requests_total"
        lines += [f"# HELP {ranks} Requests the router pinned to each dp rank",
                  f"# TYPE {ranks} counter"]
        lines += [f'{ranks}{{dp_rank="{r}"}} {n}' for r, n in sorted(self.ranks.items())]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    def app(self) -> web.Application:
        """The routes, for a server of its own or one a test runs in-process."""
        async def client(_app: web.Application):
            self.client = ClientSession(timeout=ClientTimeout(total=None, sock_connect=10))
            yield
            await self.client.close()

        app = web.Application()
        app.cleanup_ctx.append(client)
        app.router.add_post("/v1/completions", self.forward)
        app.router.add_post("/v1/chat/completions", self.forward)
        app.router.add_get("/v1/models", self.forward)
        app.router.add_get("/health", self.health)
        return app

    async def start(self, port: int, prometheus_port: int | None) -> None:
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
        if prometheus_port is not None:
            metrics = web.Application()
            metrics.router.add_get("/metrics", self.metrics)
            mrunner = web.AppRunner(metrics, access_log=None)
            await mrunner.setup()
            await web.TCPSite(mrunner, "127.0.0.1", prometheus_port).start()
        print(f"PORT {runner.addresses[0][1]}", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1", help="accepted; it listens on loopback")
    p.add_argument("--worker-urls", required=True)
    p.add_argument("--flavor", choices=sorted(SESSION_HEADERS), default="vllm")
    p.add_argument("--intra-node-data-parallel-size", type=int, default=1, dest="dp")
    p.add_argument("--prometheus-port", type=int, default=None)
    p.add_argument("--dp-aware", action="store_true",
                   help="sgl-router: write the dp rank into the body as data_parallel_rank")
    a = p.parse_args(argv)
    asyncio.run(Router(a.worker_urls, a.flavor, a.dp, a.dp_aware).start(a.port,
                                                                       a.prometheus_port))


if __name__ == "__main__":
    main()
