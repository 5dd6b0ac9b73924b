"""A fixed-sequence point as InferenceX's client would have saved it, plus the environment its
post-processing reads: `<RESULT_FILENAME>.json` and `<RESULT_FILENAME>.env`.

The JSON is the `--save-result` file of InferenceX's fork of vLLM's `benchmark_serving.py`
(docs/upstream/inferencex.md §4.1; SemiAnalysisAI/InferenceX:
utils/bench_serving/benchmark_serving.py@d39a07fd0a112816fe9bcecc0fc4087b2541457a): counts,
throughputs in tokens/s and requests/s, and mean/median/std/pNN of ttft, tpot, itl and e2el in
milliseconds. Our definitions are that client's (docs/methodology.md §3), so every value is our
point's own metric, converted from seconds to milliseconds; nothing is measured again here.

The .env file holds every variable `utils/process_result.py` reads
(SemiAnalysisAI/InferenceX:utils/process_result.py@77f3e680728b4026bb0b9e05dca7ba6cb5502362 and
its successor infx/results/fixed_sequence.py@437e74ed8474a1385c60a7c11b1a9377a739d8ff, which
adds PP_SIZE/DCP_SIZE/PCP_SIZE and divides by TP x PP x PCP). The names shared with the agentic
export (framework, model prefix, runner, RESULT_FILENAME) live here too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.publish.ingest import ENGINES, MODELS
from harness.publish.links import readable_point_name
from harness.record.metrics import LATENCIES
from harness.record.point_record import PointRecord
from harness.record.results import atomic_write, dumps

# Our engine kinds and model names -> InferenceX's `framework` and `model-prefix`: the inverse
# of what `harness ingest-inferencex` maps their rows to, so a round trip keeps the names.
FRAMEWORKS = {ours: theirs for theirs, ours in ENGINES.items()}
MODEL_PREFIXES = {ours: theirs for theirs, ours in MODELS.items()}
# InferenceX's EXP_NAME suffix for its three shapes, else "{isl}_{osl}"
# (utils/matrix_logic/generate_sweep_configs.py@93ada601e6ca1163079fddc597ca5d03cf7bbdbd).
SEQ_NAMES = {(1024, 1024): "1k1k", (1024, 8192): "1k8k", (8192, 1024): "8k1k"}
# The statistics vLLM's client saves per metric: mean, median, std, then --metric-percentiles
# (InferenceX passes 90, 99, 99.9; docs/methodology.md §2). Keys: `p99.9_ttft_ms`.
SAVED_STATS = ("mean", "median", "std", "p90", "p99", "p99.9")


def framework(rec: PointRecord) -> str:
    return FRAMEWORKS.get(rec.identity.engine, rec.identity.engine)


def model_prefix(rec: PointRecord) -> str:
    return MODEL_PREFIXES.get(rec.identity.model, rec.identity.model)


def runner(rec: PointRecord) -> str:
    """Our chip names are InferenceX's runner types (h200, b200, mi355x, ...); `cpu` stays."""
    return rec.identity.chip


def exp_name(rec: PointRecord) -> str:
    ident = rec.identity
    if rec.traits.has_sessions:
        # Not documented upstream for agentic jobs (their workflow sets ISL=OSL=0); ours.
        return f"{model_prefix(rec)}_agentic"
    seq = SEQ_NAMES.get((ident.isl, ident.osl), f"{ident.isl}_{ident.osl}")
    return f"{model_prefix(rec)}_{seq}"


def result_filename(rec: PointRecord) -> str:
    """`${EXP_NAME}_${PRECISION}_${FRAMEWORK}_tp${TP}_ep${EP_SIZE}_dpa_${DP_ATTENTION}_conc${CONC}
    _${runner}`, as SemiAnalysisAI/InferenceX:.github/workflows/benchmark-tmpl.yml
    @0a2e309ac18ab9f424b76e5449ddaba5ee9d1c87 builds it. (The workflow @00983c3e22a0489aa5f3219f
    4b8765f2258099fe hashes a longer name with the recipe fingerprint instead; a hash would make
    the files unreadable to people, so the documented readable form is used.)"""
    i = rec.identity
    dpa = str(bool(i.dp_attention)).lower()
    return (f"{exp_name(rec)}_{i.precision}_{framework(rec)}_tp{i.tp}_ep{i.ep}_dpa_{dpa}"
            f"_conc{i.conc}_{runner(rec)}")


def result_filenames(records: list[PointRecord]) -> dict[str, str]:
    """point_id -> RESULT_FILENAME. The upstream name leaves out the speculator, the repeat and
    the scenario settings, so two of our points can share one; every point of such a clash gets
    its id with the speculator's name and k appended (`..._conc1_cpu_c1-ngram-k4-r0-<hash>`,
    harness.publish.links.readable_point_name), independent of the order points are listed in."""
    base = {r.point_id: result_filename(r) for r in records}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    tail = {r.point_id: readable_point_name(r) for r in records}
    return {pid: name if counts[name] == 1 else f"{name}_{tail[pid]}"
            for pid, name in base.items()}


def job_config(run_dir: Path, rec: PointRecord) -> dict[str, Any]:
    """The resolved config of the point's job (configs/<job>.yaml), {} when it is not there
    (ingested rows, baselines): only settings the point itself does not carry are read."""
    job = rec.provenance.get("job")
    path = run_dir / "configs" / f"{job}.yaml"
    if not job or not path.is_file():
        return {}
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError:
        return {}


def base_env(rec: PointRecord) -> dict[str, str]:
    """The variables both post-processors read, with InferenceX's spellings and defaults."""
    i = rec.identity
    env = {
        "RUNNER_TYPE": runner(rec), "FRAMEWORK": framework(rec), "PRECISION": i.precision,
        "SPEC_DECODING": i.spec_method or "none", "MODEL": i.hf_id or i.model,
        "MODEL_PREFIX": model_prefix(rec), "IMAGE": i.engine_image or "", "CONC": str(i.conc),
        "EXP_NAME": exp_name(rec), "DISAGG": str(bool(i.disagg)).lower(),
        "IS_MULTINODE": str(bool(i.disagg)).lower(), "TP": str(i.tp), "EP_SIZE": str(i.ep),
        "DP_ATTENTION": str(bool(i.dp_attention)).lower(), "PP_SIZE": str(i.pp),
        # We run no context parallelism: one decode/prefill context-parallel rank each.
        "DCP_SIZE": "1", "PCP_SIZE": "1",
        # Present and empty, as their workflow passes them when a recipe has none.
        "RECIPE_FINGERPRINT": "", "ROUTER_METADATA": "", "KV_P2P_TRANSFER": "",
    }
    if i.disagg:
        env.update(_multinode_env(rec))
    return env


def _multinode_env(rec: PointRecord) -> dict[str, str]:
    """Disaggregated points exist here only as ingested InferenceX rows, which carry their
    prefill/decode shape as extras (their own field names)."""
    x = rec.extras
    pre, dec = int(x.get("num_prefill_gpu") or 0), int(x.get("num_decode_gpu") or 0)
    out = {"PREFILL_GPUS": str(pre), "DECODE_GPUS": str(dec)}
    for role in ("prefill", "decode"):
        up = role.upper()
        out[f"{up}_NUM_WORKERS"] = str(x.get(f"{role}_num_workers") or 1)
        out[f"{up}_TP"] = str(x.get(f"{role}_tp") or 1)
        out[f"{up}_EP"] = str(x.get(f"{role}_ep") or 1)
        out[f"{up}_DP_ATTN"] = str(bool(x.get(f"{role}_dp_attention"))).lower()
    return out


def fixed_env(rec: PointRecord, name: str, cfg: Mapping[str, Any]) -> dict[str, str]:
    i = rec.identity
    scen = cfg.get("scenario") or {}
    return {**base_env(rec), "RESULT_FILENAME": name, "ISL": str(i.isl), "OSL": str(i.osl),
            "RANDOM_RANGE_RATIO": str(scen.get("range_ratio", 0.8)),
            # Ours (README: ISL + OSL + 256); InferenceX's matrix uses + 200.
            "MAX_MODEL_LEN": str(i.isl + i.osl + 256), "SCENARIO_TYPE": "fixed-seq-len"}


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def save_result(rec: PointRecord, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The `--save-result` JSON from our point's metrics (seconds -> ms for `*_ms`).

    A statistic we do not have (no completed request, no request with two tokens) is left
    out rather than written as null: process_result converts every `*ms` key with float().
    """
    g, i = rec.get, rec.identity
    out: dict[str, Any] = {
        "date": _date(rec), "backend": _backend(cfg), "model_id": i.hf_id or i.model,
        "tokenizer_id": i.hf_id or i.model, "best_of": 1, "num_prompts": g("num_requests"),
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": i.conc,
        "duration": g("duration_s"), "completed": g("num_completed"),
        "total_input_tokens": g("total_input_tokens"),
        "total_output_tokens": g("total_output_tokens"),
        "request_throughput": g("request_tput"), "request_goodput:": None,
        "output_throughput": g("output_tput"), "total_token_throughput": g("total_tput"),
    }
    for lat in LATENCIES:
        for s in SAVED_STATS:
            v = g(f"{s}_{lat}")
            if _finite(v):
                out[f"{s}_{lat}_ms"] = v * 1000.0
    # `--metadata` pairs: which of our points this is, and whether it was valid.
    out.update({"harness_run_id": rec.run_id, "harness_point_id": rec.point_id,
                "harness_valid": rec.valid, "harness_invalid_reasons": list(rec.reasons)})
    return out


def _backend(cfg: Mapping[str, Any]) -> str:
    """InferenceX's backend names: `openai` posts to /v1/completions, `openai-chat` to chat."""
    api = (cfg.get("scenario") or {}).get("api", "completions")
    return "openai-chat" if api == "chat" else "openai"


def _date(rec: PointRecord) -> str:
    """vLLM's `%Y%m%d-%H%M%S`, from when the point was measured."""
    wall = rec.provenance.get("measured_start_wall")
    t = time.gmtime(wall) if _finite(wall) else time.gmtime()
    return time.strftime("%Y%m%d-%H%M%S", t)


def env_text(env: Mapping[str, str]) -> bytes:
    """KEY=VALUE lines, nothing else, so `set -a; . FILE` and plain parsers both read it.
    Values never contain a newline (our names and numbers)."""
    return "".join(f"{k}={v}\n" for k, v in env.items()).encode()


def export_point(run_dir: Path, rec: PointRecord, name: str, out: Path) -> list[Path]:
    cfg = job_config(run_dir, rec)
    result, env = out / f"{name}.json", out / f"{name}.env"
    atomic_write(result, dumps(save_result(rec, cfg)))
    atomic_write(env, env_text(fixed_env(rec, name, cfg)))
    return [result, env]
