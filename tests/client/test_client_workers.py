"""client.workers=N: one point's load over N client processes, merged into one phase."""

from __future__ import annotations

import time
import urllib.request
from collections import Counter

import orjson
import pytest

from harness.client.streaming import ClientSettings
from harness.client.workers import (
    WorkerError,
    run_partitioned,
    schedule_over_workers,
    shared_start,
    split_closed_loop,
)
from harness.records import RequestSpec
from harness.workloads.timestamped import schedule_phase


def _clock(_: int) -> tuple[float, float]:
    return time.perf_counter(), shared_start()


def _boom(part: int) -> None:
    raise ValueError(f"part {part} refuses")


def test_children_share_the_parents_clock_and_failures_name_the_part() -> None:
    """perf_counter is CLOCK_MONOTONIC: a child's stamp lies between the parent's before and
    after stamps (a per-process clock would be off by the processes' ages)."""
    before = time.perf_counter()
    stamps = run_partitioned(_clock, [0, 1])
    after = time.perf_counter()
    assert all(before < t < after for t, _ in stamps)
    assert stamps[0][1] == stamps[1][1] and before < stamps[0][1] < after + 0.05  # one instant
    with pytest.raises(WorkerError, match="process 0 of 1 failed"):
        run_partitioned(_boom, [1])


def test_split_keeps_every_spec_once_and_the_slots_in_total() -> None:
    specs = [RequestSpec(f"r{i}", "/v1/completions", b"{}", 1, 1) for i in range(50)]
    parts = split_closed_loop(specs, 5, 2)
    assert [c for _, c in parts] == [3, 2]
    ids = [s.request_id for p, _ in parts for s in p]
    assert sorted(ids) == sorted(s.request_id for s in specs)
    assert [len(p) for p, _ in parts] == [30, 20]  # in proportion to the slots
    assert [c for _, c in split_closed_loop(specs, 1, 4)] == [1]  # never more than C


def _specs(n: int, prefix: str, tokens: int = 8) -> list[RequestSpec]:
    out = []
    for i in range(n):
        body = orjson.dumps({"prompt": "a b", "max_tokens": tokens, "stream": True,
                             "x_id": f"{prefix}{i}", "stream_options": {"include_usage": True},
                             "x_script": {"ttft_ms": 20, "itl_ms": 10}})
        out.append(RequestSpec(f"{prefix}{i}", "/v1/completions", body, 2, tokens))
    return out


def test_a_schedule_over_workers_keeps_its_times(scripted_server: str) -> None:
    schedule = [(0.02 * i, s) for i, s in enumerate(_specs(20, "t"))]
    phase = schedule_over_workers(ClientSettings(scripted_server), schedule, 2, schedule_phase)
    assert sorted(r.request_id for r in phase.records) == sorted(s.request_id
                                                                 for _, s in schedule)
    by_id = {r.request_id: r for r in phase.records}
    for at, spec in schedule:  # never early, on the shared start instant
        assert by_id[spec.request_id].issue_ts >= phase.start_ts + at


def test_the_fixed_workload_runs_its_point_over_workers(scripted_server: str) -> None:
    """client.workers=2 on the fixed-sequence run path: warmup and measured phases each split
    over two processes; the same request count, every request once (the server saw each
    once), the concurrency held in total, the merged window the children's."""
    from harness.workloads.base import Target
    from harness.workloads.fixed_seq import measure_closed_loop

    seen: list[str] = []
    target = Target(scripted_server, ClientSettings("", workers=2), lambda: {})
    specs = _specs(48, "fm", tokens=32)  # ~0.2 s each (1-3 tokens a chunk), 6 rounds of 8
    meas = measure_closed_loop(target, _specs(4, "fw"), specs, 8,
                               lambda r: seen.append(r.request_id))
    phase = meas.measured
    ids = [r.request_id for r in phase.records]
    assert sorted(r.request_id for r in meas.warmup.records) == [f"fw{i}" for i in range(4)]
    assert len(ids) == 48 and set(ids) == {s.request_id for s in specs}
    assert all(r.ok for r in phase.records)
    assert sorted(seen) == sorted(ids + [f"fw{i}" for i in range(4)])
    log = orjson.loads(urllib.request.urlopen(scripted_server + "/x/log").read())
    assert Counter(k for k in log if k.startswith("fm")) == Counter(ids)
    assert all(log[r.request_id]["received"] > r.send_ts for r in phase.records)
    assert abs(phase.health.inflight_mean - 8) < 1.6, phase.health.inflight_mean
    assert phase.health.cpu_cores >= phase.health.cpu_share > 0  # two processes' CPU, summed
    assert phase.start_ts == min(r.send_ts for r in phase.records)
    assert phase.end_ts == max(r.end_ts for r in phase.records)


def test_workers_config_is_checked_before_anything_runs() -> None:
    from harness.config.compose import compose_sweep
    from harness.config.errors import ConfigError

    base = ["engine=endpoint", "engine.url=http://127.0.0.1:9", "run_id=u"]
    assert compose_sweep([*base, "client.workers=2"]).client.workers == 2
    with pytest.raises(ConfigError, match=r"client\.workers"):
        compose_sweep([*base, "client.workers=0"])
    # agentic lanes: one scheduler, the requests over a client pool (harness/client/pool.py)
    assert compose_sweep([*base, "scenarios=agentic-weka-cpu",
                          "client.workers=2"]).client.workers == 2
