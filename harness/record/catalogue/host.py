"""The bench around the client: the host's CPU outside our processes, the hypervisor's steal,
and the accelerator's clocks, through each point's window (harness.telemetry.host,
docs/host.md). Judged by harness.record.bench_rules."""

from __future__ import annotations

from harness.record.catalogue.base import NEUTRAL, Metric, m

_CORES = "cores (CPU-seconds per second) through the measured window"
METRICS: list[Metric] = [
    m("host_foreign_cpu", "Host CPU outside our processes", "cores", NEUTRAL,
      "busy CPU (user + nice + system) less that of the harness's and the engine's process "
      f"trees, {_CORES}", "host"),
    m("host_foreign_procs_cpu", "Host CPU of named foreign processes", "cores", NEUTRAL,
      f"the part of host_foreign_cpu seen in processes outside our trees, {_CORES}", "host"),
    m("host_kernel_cpu", "Host CPU of kernel threads", "cores", NEUTRAL,
      f"kernel threads' share of the foreign CPU, {_CORES}", "host"),
    m("host_unattributed_cpu", "Host CPU no process accounts for", "cores", NEUTRAL,
      f"foreign CPU of processes that came and went between samples, {_CORES}", "host"),
    m("host_ours_cpu", "Host CPU of our processes", "cores", NEUTRAL,
      f"the harness's and the engine's process trees, {_CORES}", "host"),
    m("host_irq_cpu", "Host interrupt CPU", "cores", NEUTRAL,
      f"hard and soft interrupt time, kept apart from foreign CPU, {_CORES}", "host"),
    m("host_steal_share", "Hypervisor steal", "ratio", NEUTRAL,
      "share of CPU time the hypervisor gave to other guests through the window", "host"),
    m("host_covered_s", "Host sampling coverage", "s", NEUTRAL,
      "seconds of the measured window the host's readings cover", "host"),
    m("gpu_clock_readings", "GPU clock readings", "count", NEUTRAL,
      "clock and throttle-reason readings in the window", "host"),
    m("gpu_sm_clock_mean_mhz", "GPU SM clock, mean", "MHz", NEUTRAL,
      "mean SM clock over the window's readings", "host"),
    m("gpu_sm_clock_min_mhz", "GPU SM clock, min", "MHz", NEUTRAL,
      "lowest SM clock over the window's readings", "host"),
    m("gpu_throttled_share", "GPU thermal/hardware slowdown share", "ratio", NEUTRAL,
      "share of readings with thermal or hardware slowdown or power brake active", "host"),
    m("gpu_power_capped_share", "GPU power-capped share", "ratio", NEUTRAL,
      "share of readings with the software power cap active (recorded, not judged)", "host"),
]
METRICS += [
    m("decode_rate_median", "Decode rate per request, median", "steps/s", NEUTRAL,
      "median over a fixed point's measured requests of decode steps per second between "
      "first and last token (a speculative step counts once: harness.record.steadiness)",
      "host"),
    m("decode_slow_ratio", "Slowest tenth's decode rate against the median", "ratio", NEUTRAL,
      "mean decode rate of the slowest ceil(n/10) requests over the median; rule "
      "engine_steady (validity.steady_decile_min)", "host"),
    m("decode_judged", "Requests judged for steadiness", "count", NEUTRAL,
      "measured requests whose decode rate the steadiness rule read", "host"),
]
