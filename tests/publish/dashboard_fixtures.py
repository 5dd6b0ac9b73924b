"""Run directories for the dashboard tests: a fixed and an agentic point of ours with real
request records, the server's 1 s samples, a series file (the agreed long format), an invalid
point, hostile text, and the shipped B200 rows ingested beside them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from harness.publish.ingest import ingest
from harness.record.results import RunDir
from harness.records import PHASE_MEASURED, PHASE_WARMUP, RequestRecord

EVIL = '<img src=x onerror="window.__pwned=1">'
B200_ROWS = Path("scenarios/reference/dsr1_b200_rows.json")
T0 = 1000.0  # the measured window's start on the requests' clock


def base_point(pid: str, kind: str, conc: int, tput: float, intv: float, **kw) -> dict:
    p = {"point_id": pid, "run_id": "ours", "model": "smollm2-135m", "precision": "q4_1",
         "chip": "cpu", "engine": "llamacpp", "engine_version": "x", "spec_method": "none",
         "spec_k": 0, "tp": 1, "ep": 1, "dp_attention": False, "pp": 1, "gpus": 1,
         "scenario": "fixed-1k1k" if kind == "fixed" else "agentic-weka-cpu",
         "scenario_kind": kind, "isl": 1024, "osl": 1024, "conc": conc, "valid": True,
         "status": "ok", "started_at": "2026-11-30T07:00:00", "tput_per_gpu": tput,
         "output_tput_per_gpu": tput / 2, "median_intvty": intv, "p90_e2e_intvty": intv / 3,
         "chip_power_kw_all_in": 0.05, "chip_cost_hyperscaler": 0.1, "chip_cost_neocloud": 0.08,
         "chip_cost_rental_3yr": 0.05, "measured_j_per_tok": 0.123, "power_valid": True}
    p.update(kw)
    return p


def records(n: int, rng: np.random.Generator, agentic: bool) -> list[RequestRecord]:
    out = []
    for i in range(n):
        phase = PHASE_WARMUP if i < 2 else PHASE_MEASURED
        send = T0 + (i - 2) * 0.5 + rng.uniform(0, 0.1)
        first = send + rng.uniform(0.05, 0.3)
        chunks = first + np.cumsum(rng.uniform(0.01, 0.05, 8)) - 0.01
        tags = {}
        if agentic:
            lane = i % 2
            agent = "" if i % 3 else ("agent_001" if lane else EVIL)
            tags = {"lane": lane, "session": f"L{lane}S1", "agent": agent, "turn": i,
                    "think": 1.0}
        out.append(RequestRecord(
            request_id=f"r{i}", phase=phase, expected_prompt_tokens=100, max_tokens=8,
            issue_ts=send, send_ts=send, first_token_ts=first, last_token_ts=chunks[-1],
            end_ts=chunks[-1] + 0.001, chunk_ts=[first, *chunks[1:]], prompt_tokens=100,
            completion_tokens=8, http_status=200, finish_reason="length", tags=tags))
    return out


def server_samples(names: list[str]) -> dict:
    samples = [{"t": T0 - 2 + s, "metrics": {n: float(s * (k + 1)) for k, n in enumerate(names)}}
               for s in range(12)]
    return {"before": {}, "after": {}, "measured_window": [T0, T0 + 9], "samples": samples}


def series_frame() -> pd.DataFrame:
    rows = []
    for t in np.arange(-2.0, 9.0, 1.0):
        for source, device, name, v in (("server", "", "num_requests_running", 2.0),
                                        ("server", "", "kv_usage", 0.3),
                                        ("client", "", "inflight", 2.0),
                                        ("client", "", "loop_lag_ms", 0.4),
                                        ("gpu", "0", "power_w", 300.0),
                                        ("gpu", "1", "power_w", 310.0)):
            rows.append({"t_s": float(t), "source": source, "device": device, "name": name,
                         "value": v + t})
        # cumulative counters as the engine reports them: 10 tokens/s, 2 drafts and 3
        # accepted draft tokens per second (AL 2.5 in every interval)
        for name, per_s in (("generation_tokens_total", 10.0), ("spec_drafts_total", 2.0),
                            ("spec_accepted_total", 3.0)):
            rows.append({"t_s": float(t), "source": "server", "device": "", "name": name,
                         "value": 100.0 + per_s * (t + 2)})
    return pd.DataFrame(rows)


def build(root: Path) -> dict:
    """The run directories; returns what the tests compare pages with."""
    rows = [r for r in json.loads(B200_ROWS.read_text()) if (r["isl"], r["osl"]) == (1024, 1024)]
    (root / "rows.json").write_text(json.dumps(rows))
    ingest(root / "rows.json", root / "ix")
    run = RunDir.open(root, "ours")
    rng = np.random.default_rng(7)
    fixed = base_point("c2-fixed", "fixed", 2, 900.0, 50.0, model=EVIL)
    fixed_bad = base_point("c4-fixed-invalid", "fixed", 4, 99999.0, 999.0, model=EVIL,
                           valid=False, invalid_reasons=["test: marked invalid"])
    ag = [base_point("a1", "agentic", 1, 200.0, 30.0), base_point("a2", "agentic", 2, 350.0, 24.0),
          base_point("a4", "agentic", 4, 400.0, 9.0),
          base_point("a8-invalid", "agentic", 8, 9000.0, 90.0, valid=False,
                     invalid_reasons=["test"])]
    names = ["vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total"]
    for p, agentic in ((fixed, False), (fixed_bad, False), *((a, True) for a in ag)):
        run.write_requests(p["point_id"], records(14, rng, agentic))
        run.write_json(f"server_metrics/{p['point_id']}.json", server_samples(names))
        run.append_point(p)
    (run.root / "series").mkdir()
    series_frame().to_parquet(run.root / "series" / "a2.parquet")
    return {"root": root, "runs": [root / "ix", root / "ours"], "server_names": names,
            "series": series_frame()}
