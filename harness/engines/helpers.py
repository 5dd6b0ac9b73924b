"""Helper processes started with the engine (engine.helpers): a router in front of it on the
job's port while the engine listens behind it (InferenceX's agentic DP-attention rows:
`vllm-router` / `sglang_router.launch_router` on PORT, the engine on PORT+1, router metrics on
PORT+10000), or a daemon it needs first (`mooncake_master` on PORT+12000),
benchmarks/single_node/agentic/dsv4_fp4_b200_{vllm,sglang}_mtp.sh@843c6254.

Ports: {port} in any argv (engine's or helper's) is the job's port and {port+N} that plus N,
so one recipe renders the same command for any free port the harness picks."""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.config.schema import SweepConfig

_PORT_PLUS = re.compile(r"\{port\+(\d+)\}")


@dataclass(frozen=True)
class HelperPlan:
    name: str
    role: str  # router | daemon
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    health_path: str | None = None
    fronts: bool = False


def expand_ports(arg: str, base_port: int) -> str:
    """{port+N} -> the number, before str.format fills the rest."""
    return _PORT_PLUS.sub(lambda m: str(base_port + int(m.group(1))), arg)


def render_arg(arg: str, base_port: int, values: Mapping[str, str]) -> str:
    return expand_ports(arg, base_port).format_map(values)


def port_offsets(sc: SweepConfig) -> set[int]:
    """Every offset from the job's port any process of the launch listens on or names."""
    found = {0, sc.engine.port_offset, *(h.port_offset for h in sc.engine.helpers)}
    for arg in [*sc.engine.argv_template, *sc.engine.extra_args,
                *(a for h in sc.engine.helpers for a in h.argv)]:
        found |= {int(n) for n in _PORT_PLUS.findall(arg)}
    return found


def free_base_port(offsets: set[int], tries: int = 50) -> int:
    """A job port P with P + every offset free on loopback (a router, its engine behind it,
    their metrics ports)."""
    for _ in range(tries):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + max(offsets) > 65535:
            continue
        if all(_free(base + o) for o in offsets if o):
            return base
    raise RuntimeError(f"no free port P with P+{sorted(offsets)} all free")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def helper_plans(sc: SweepConfig, base_port: int, values: Mapping[str, str]) -> list[HelperPlan]:
    vals = {**values, "port": str(base_port),
            "engine_port": str(base_port + sc.engine.port_offset)}
    return [HelperPlan(name=h.name, role=h.role,
                       argv=[render_arg(a, base_port, vals) for a in h.argv],
                       env=dict(h.env), port=base_port + h.port_offset,
                       health_path=h.health_path, fronts=h.fronts)
            for h in sc.engine.helpers]
