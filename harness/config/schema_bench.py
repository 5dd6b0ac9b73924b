"""Schemas of the measuring bench around each point: the client (the instrument and its
self-check bounds), the accelerator telemetry sampled beside it, and how strictly the host and
the sample are judged (docs/client.md, docs/energy.md, docs/host.md). Re-exported by
harness.config.schema."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.config.fields import about, setting


@dataclass
class ClientConfig:
    timeout_s: float = setting(3600.0, gt=0, help="seconds a request may take in all",
                               fix="e.g. client.timeout_s=3600")
    stall_timeout_s: float = setting(
        600.0, gt=0, fix="e.g. client.stall_timeout_s=600",
        help="a stream silent this long fails; a point where most do = a hung engine")
    strict_sse: bool = setting(
        False, help="parse every SSE event in full (slower; cross-checks the fast read)")
    max_stamp_err_ms: float = setting(
        1.0, gt=0, fix="e.g. client.max_stamp_err_ms=1.0",
        help="estimated p99 timestamp error (ms) above which a point is flagged")
    max_cpu_share: float = setting(0.95, gt=0, le=1, fix="a share in (0, 1], e.g. 0.95",
                                   help="the client's CPU share above which a point is flagged")
    # An SSE event larger than this fails its request with a reason (a server that never ends
    # an event would otherwise grow the client's buffer without bound).
    max_event_bytes: int = setting(4 << 20, ge=1024, fix="e.g. client.max_event_bytes=4194304",
                                   help="an SSE event larger than this fails its request")
    # Client processes a point's load is split over (harness/client/workers.py); 1: one.
    workers: int = setting(
        1, ge=1, le=256, fix="e.g. client.workers=2 (one client process per core)",
        help="client processes a point's load is split over")
    # Agentic lanes over workers > 1: "scheduler" (one scheduler, the HTTP work over the
    # processes: harness/client/pool.py, AIPerf's shape) | "lanes" (the lanes themselves,
    # each process its own scheduler on a shared idle clock: harness/workloads/replay_split.py)
    agentic_workers: str = setting(
        "scheduler", choices=("scheduler", "lanes"), noun="split",
        fix="use scheduler (the default) or lanes (docs/replay.md)",
        help="agentic lanes over workers > 1: one scheduler, or the lanes split")
    # What reads the measured stream: aiohttp, or httptools (our own protocol over llhttp,
    # harness/client/h1_conn.py: 75-84% of a do-nothing reader's rate at 64-256 streams where
    # aiohttp read 52-53%; both hold the same fault tests). aiohttp stays the default: on the
    # embedded engine's concurrency-1 point httptools's stamp error p99 read 0.9-1.3 ms against
    # aiohttp's 0.3-0.7 ms, over the 1 ms bound (docs/client.md "Transports").
    transport: str = setting("aiohttp", choices=("aiohttp", "httptools"),
                             fix="use aiohttp (the default) or httptools (docs/client.md)",
                             help="what reads the measured stream")
    # httptools only: "compiled" (the steady read in C where harness.client._fastread is built,
    # else the Python read; provenance's versions say which) | "python" (docs/client.md "The
    # compiled read")
    read_path: str = setting("compiled", choices=("compiled", "python"),
                             fix="use compiled (the default) or python (docs/client.md)",
                             help="httptools only: the steady read in C, or in Python")
    # A point is flagged when the client held requests longer than this between issuing one
    # and its body reaching the socket (p99, connection set-up excluded)...
    max_queue_delay_ms: float = setting(
        10.0, gt=0, fix="e.g. client.max_queue_delay_ms=10",
        help="p99 client-side hold (ms) above which a point is flagged")
    # ...or when its worst event-loop stall could move p99 E2EL/TPOT by more than this share.
    max_stall_share: float = setting(
        0.01, gt=0, le=1, fix="a share in (0, 1], e.g. 0.01",
        help="p99 E2EL/TPOT share a loop stall may move before a point is flagged")


@dataclass
class TelemetryConfig:
    """Accelerator telemetry sampled through every point (harness.telemetry, docs/energy.md)."""

    source: str = setting(
        "auto", help="where power and clocks are read: auto, nvml, nvidia-smi, amd-smi or none")
    period_s: float = setting(
        1.0, help="seconds between samples (InferenceX's start_gpu_monitor: 1)")
    max_gap_s: float = setting(
        3.0, help="largest gap (s) between samples in the window before power is invalid "
        "(InferenceX's aggregate_power.py: 3)")
    require_power: bool = setting(
        False, help="invalid power makes the point invalid (InferenceX's REQUIRE_POWER)")
    # for a point that occupies some of a host's GPUs
    devices: list[int] = field(default_factory=list, metadata=about(
        "device indices whose power counts; []: every device the tool reports, as upstream"))


@dataclass
class ValidityConfig:
    """How strictly the bench around the client is judged (harness.record.validity)."""

    # The host (harness.telemetry.host): CPU of processes outside the harness's and the
    # engine's trees, and the GPUs' clocks: invalid | warn (kept, marked host_warning) | off.
    # A point the host disturbed is not the engine's figure, so it fails by default; where a
    # quiet host cannot be had, warn keeps it with its mark (docs/host.md).
    host: str = setting(
        "invalid",
        help="a disturbed host (foreign CPU, GPU clock slowdown): invalid (fails the point), "
        "warn (marks it) or off")
    host_foreign_cpu_max: float = setting(
        0.2, help="cores used by processes outside the harness's and the engine's (window "
        "mean) above which the host is disturbed")
    # The hypervisor's steal, judged apart from the host's processes: something the VM's user
    # cannot stop and a cloud instance meets in bursts whoever runs on it, so a point is kept
    # and marked by default (steal=invalid to fail it); its effect on the figures is judged by
    # the client's stamp rule and the engine's steadiness rule. Why: docs/host.md.
    steal: str = setting(
        "warn", help="the hypervisor's steal: invalid (fails the point), warn (marks it) or off")
    host_steal_max: float = setting(
        0.05, help="steal, as a share of all CPU time through the window, above which it counts")
    # Completed requests a point needs for the percentiles its kind reports (fixed: p90,
    # agentic: AgentX's p95): invalid | warn (kept, marked sample_warning) | off
    sample: str = setting(
        "warn", help="too few completed requests: invalid (fails the point), warn (marks it) "
        "or off")
    min_sample_fixed: int = setting(10, help="completed requests a fixed point needs (its p90)")
    min_sample_agentic: int = setting(
        20, help="completed requests an agentic point needs (its p95)")
    # The engine's steadiness (harness.record.steadiness): a fixed point's slowest tenth of
    # requests must decode at >= steady_decile_min of the median rate: invalid | warn (kept,
    # marked steady_warning) | off. 0.5 from measured points: docs/host.md
    steady: str = setting(
        "invalid", help="an unsteady engine (fixed points): invalid (fails the point), warn "
        "(marks it) or off")
    steady_decile_min: float = setting(
        0.5, help="share of the median decode rate the slowest tenth of requests must reach")
