"""The harness's own client in one parity cell: the closed loop every harness point runs.

Run: python -m benchmarks.parity_harness URL CONCURRENCY REQUESTS OSL OUT.json
Writes the point's metrics (harness.record.metrics.point_metrics) as JSON. A warmup of
CONCURRENCY short requests goes first, as in every harness point, and is not measured.
"""

from __future__ import annotations

import sys

import orjson

from harness.client.closed_loop import run_closed_loop
from harness.client.streaming import ClientSettings, StreamingClient, run_async
from harness.record.metrics import GpuCount, point_metrics
from harness.records import PHASE_WARMUP, RequestSpec

PROMPT = " ".join(["hello"] * 16)


def specs(n: int, osl: int, prefix: str, phase: str | None = None) -> list[RequestSpec]:
    out = []
    for i in range(n):
        body = {"model": "scripted", "prompt": PROMPT, "max_tokens": osl, "stream": True,
                "stream_options": {"include_usage": True}, "x_id": f"{prefix}{i}"}
        spec = RequestSpec(f"{prefix}{i}", "/v1/completions", orjson.dumps(body), 16, osl)
        if phase:
            spec.phase = phase
        out.append(spec)
    return out


def main(argv: list[str]) -> None:
    url, conc, n, osl, out = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), argv[4]

    async def go():
        async with StreamingClient(ClientSettings(url)) as c:
            await run_closed_loop(c, specs(conc, 8, "warm", PHASE_WARMUP), conc)
            return await run_closed_loop(c, specs(n, osl, "r"), conc)

    phase = run_async(go())
    m = point_metrics(phase.records, phase.duration_s, GpuCount(1))
    m["client_bottleneck"] = bool(phase.health.bottleneck)
    with open(out, "wb") as f:
        f.write(orjson.dumps(m, option=orjson.OPT_SERIALIZE_NUMPY))


if __name__ == "__main__":
    main(sys.argv[1:])
