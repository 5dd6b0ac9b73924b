"""A router emulator: what InferenceX puts in front of a DP-attention engine on its agentic rows
(`vllm-router` and SGLang's `sglang_router.launch_router`, benchmarks/single_node/agentic/
dsv4_fp4_b200_{vllm,sglang}_mtp.sh@843c6254), for tests of the harness through a router.

Behaviour modelled on those routers as the scripts run them:
- `/v1/completions`, `/v1/chat/completions`: forwarded to the worker (`--worker-urls`), the
  response streamed back chunk by chunk as it arrives; the session header the client sends
  (`X-Session-ID` for vllm-router, `x-correlation-id` for sglang's `--request-id-headers`)
  picks a DP rank by hashing (consistent_hash / consistent_hashing policies), passed on as
  `X-data-parallel-rank` (vllm-router's `--intra-node-data-parallel-size`).
- `/v1/models`: forwarded. `/health`: the router's own answer (200), not the worker's
  (sglang's `--disable-health-check`).
- `/metrics`: only on `--prometheus-port`, the router's own request counters; never the
  engine's (so a harness must scrape the engine behind it for acceptance, as upstream does
  with AIPERF_SERVER_METRICS_URLS).

Run: python -m harness.testing.router_emulator --port 0 --worker-urls http://127.0.0.1:N
Prints `PORT <n>` once it listens (harness.testing.spawn.spawn_server's convention)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib

from aiohttp import ClientSession, ClientTimeout, web

SESSION_HEADERS = {"vllm": "X-Session-ID", "sglang": "x-correlation-id"}


class Router:
    def __init__(self, worker: str, flavor: str, dp: int) -> None:
        self.worker = worker.rstrip("/")
        self.flavor = flavor
        self.dp = max(1, dp)
        self.requests: dict[tuple[str, int], int] = {}
        self.client: ClientSession | None = None

    def rank(self, request: web.Request) -> int:
        key = request.headers.get(SESSION_HEADERS[self.flavor], "")
        return int(hashlib.sha256(key.encode()).hexdigest(), 16) % self.dp if key else 0

    async def forward(self, request: web.Request) -> web.StreamResponse:
        assert self.client is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() in ("content-type", "authorization", "accept")}
        headers["X-data-parallel-rank"] = str(self.rank(request))
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
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def start(self, port: int, prometheus_port: int | None) -> None:
        self.client = ClientSession(timeout=ClientTimeout(total=None, sock_connect=10))
        app = web.Application()
        app.router.add_post("/v1/completions", self.forward)
        app.router.add_post("/v1/chat/completions", self.forward)
        app.router.add_get("/v1/models", self.forward)
        app.router.add_get("/health", self.health)
        runner = web.AppRunner(app, access_log=None)
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
    a = p.parse_args(argv)
    asyncio.run(Router(a.worker_urls, a.flavor, a.dp).start(a.port, a.prometheus_port))


if __name__ == "__main__":
    main()
