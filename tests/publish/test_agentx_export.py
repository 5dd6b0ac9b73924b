"""server_metrics_export.json from our stored scrapes of an SGLang point with two dp ranks,
read the way InferenceX's SGLang adapter reads it (docs/upstream/agentx.md §2.3, 2.3a: counter
`total` summed over series, per cache_source; gauges by their max), giving the numbers our
point records (harness.engines.server_cache)."""

from __future__ import annotations

import pytest

from harness.engines.counters import ENGINE_COUNTERS
from harness.engines.server_cache import server_cache_facts
from harness.publish.exports.aiperf_records import Clock
from harness.publish.exports.aiperf_server_metrics import server_metrics_export
from harness.record.point_record import PointIdentity, PointRecord
from harness.record.validity import Validity


def _scrape(prompt: float, device: float, host: float, usage: tuple[float, float]
            ) -> dict[str, float]:
    s = {'sglang:prompt_tokens_total{model_name="m"}': prompt,
         'sglang:cached_tokens_total{cache_source="device",model_name="m"}': device,
         'sglang:cached_tokens_total{cache_source="host",model_name="m"}': host}
    for rank, u in enumerate(usage):
        lab = f'dp_rank="{rank}",model_name="m",tp_rank="{rank}"'
        s[f"sglang:token_usage{{{lab}}}"] = u
        s[f"sglang:max_total_num_tokens{{{lab}}}"] = 5000.0
    return s


def _point() -> PointRecord:
    i = PointIdentity(model="m", precision="bf16", chip="cpu", engine="sglang",
                      scenario="agentic-weka-cpu", scenario_kind="agentic", isl=0, osl=0,
                      conc=4, tp=1, ep=1, dp_attention=True)
    return PointRecord(i.point_id(), "r", i, "ok", Validity.legacy(True, ()))


def test_sglang_export_reads_back_as_our_cache_facts() -> None:
    before = _scrape(1000, 100, 0, (0.9, 0.1))
    mid = _scrape(2000, 600, 100, (0.6, 0.2))
    after = _scrape(3000, 1300, 200, (0.3, 0.4))
    sm = {"before": before, "after": after, "measured_window": [10.0, 12.0],
          "samples": [{"t": 9.0, "metrics": before}, {"t": 11.0, "metrics": mid},
                      {"t": 12.0, "metrics": after}]}
    out = server_metrics_export(sm, _point(), {}, Clock(10.0, 0))["metrics"]

    def total(name: str, **where: str) -> float:
        return sum(s["stats"]["total"] for s in out[name]["series"]
                   if all((s["labels"] or {}).get(k) == v for k, v in where.items()))

    prompt = total("sglang:prompt_tokens")
    up = {"gpu": total("sglang:cached_tokens", cache_source="device") / prompt,
          "cpu": total("sglang:cached_tokens", cache_source="host") / prompt,
          "overall": total("sglang:cached_tokens") / prompt,
          "usage": max(s["stats"]["max"] for s in out["sglang:token_usage"]["series"]),
          "pool": sum(s["stats"]["max"] for s in out["sglang:max_total_num_tokens"]["series"])}
    samples = [(s["t"], s["metrics"]) for s in sm["samples"] if 10.0 <= s["t"] <= 12.0]
    ours = server_cache_facts(ENGINE_COUNTERS["sglang"], before, after, samples)
    assert prompt == 2000 and out["sglang:cached_tokens"]["type"] == "counter"
    assert up["gpu"] == pytest.approx(ours["server_hit_rate_device"]) == 0.6
    assert up["cpu"] == pytest.approx(ours["server_hit_rate_host"]) == 0.1
    assert up["overall"] == pytest.approx(ours["server_hit_rate_overall"])
    # the 9.0 s sample (0.9) is before the window: not the window's usage
    assert up["usage"] == pytest.approx(ours["server_kv_usage_max"]) == 0.6
    assert up["pool"] == ours["server_kv_pool_tokens"] == 10000
    assert out["sglang:token_usage"]["type"] == "gauge"
