"""Schemas of the measuring bench around each point: the client (the instrument and its
self-check bounds), the accelerator telemetry sampled beside it, and how strictly the host and
the sample are judged (docs/client.md, docs/energy.md, docs/host.md). Re-exported by
harness.config.schema."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ClientConfig:
    timeout_s: float = 3600.0
    stall_timeout_s: float = 600.0  # a stream silent this long fails; most failing = hung engine
    strict_sse: bool = False
    max_stamp_err_ms: float = 1.0
    max_cpu_share: float = 0.95
    # An SSE event larger than this fails its request with a reason (a server that never ends
    # an event would otherwise grow the client's buffer without bound).
    max_event_bytes: int = 4 << 20
    # Client processes a point's load is split over (harness/client/workers.py); 1: one.
    workers: int = 1
    # Agentic lanes over workers > 1: "scheduler" (one scheduler, the HTTP work over the
    # processes: harness/client/pool.py, AIPerf's shape) | "lanes" (the lanes themselves,
    # each process its own scheduler on a shared idle clock: harness/workloads/replay_split.py)
    agentic_workers: str = "scheduler"
    # What reads the measured stream: aiohttp, or httptools (our own protocol over llhttp,
    # harness/client/h1_stream.py; docs/client.md "Transports").
    transport: str = "aiohttp"
    # httptools only: "compiled" (the steady read in C where harness.client._fastread is built,
    # else the Python read; provenance's versions say which) | "python" (docs/client.md "The
    # compiled read")
    read_path: str = "compiled"
    # A point is flagged when the client held requests longer than this between issuing one
    # and its body reaching the socket (p99, connection set-up excluded)...
    max_queue_delay_ms: float = 10.0
    # ...or when its worst event-loop stall could move p99 E2EL/TPOT by more than this share.
    max_stall_share: float = 0.01


@dataclass
class TelemetryConfig:
    """Accelerator telemetry sampled through every point (harness.telemetry, docs/energy.md)."""

    source: str = "auto"  # auto | nvml | nvidia-smi | amd-smi | none
    period_s: float = 1.0  # InferenceX's start_gpu_monitor: nvidia-smi every 1 s
    max_gap_s: float = 3.0  # InferenceX's aggregate_power.py: largest in-window sample gap
    require_power: bool = False  # InferenceX's REQUIRE_POWER: invalid power = invalid point
    # Device indices whose power counts (empty: every device the tool reports, as upstream);
    # for a point that occupies some of a host's GPUs.
    devices: list[int] = field(default_factory=list)


@dataclass
class ValidityConfig:
    """How strictly the bench around the client is judged (harness.record.validity)."""

    # The host (harness.telemetry.host): invalid | warn (kept, marked host_warning) | off.
    # warn by default until the bounds are calibrated: on the 2-vCPU VMs this project runs on,
    # hypervisor steal measured 5-20 % through whole sessions (docs/host.md), which would
    # invalidate every point; validity.host=invalid judges as the issue asks.
    host: str = "warn"
    host_foreign_cpu_max: float = 0.2  # cores used by processes outside ours, window mean
    host_steal_max: float = 0.05  # the hypervisor's steal, share of CPU time
    # Completed requests a point needs for the percentiles its kind reports (fixed: p90,
    # agentic: AgentX's p95): invalid | warn (kept, marked sample_warning) | off
    sample: str = "warn"
    min_sample_fixed: int = 10
    min_sample_agentic: int = 20
    # The engine's steadiness (harness.record.steadiness): a fixed point's slowest tenth of
    # requests must decode at >= steady_decile_min of the median rate: invalid | warn (kept,
    # marked steady_warning) | off. 0.5 from measured points: docs/host.md
    steady: str = "invalid"
    steady_decile_min: float = 0.5
