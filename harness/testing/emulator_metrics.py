"""The engine emulator's /metrics, one renderer per engine: what each engine's source writes
(names, HELP/TYPE lines, labels, dp ranks; docs/engine-metrics.md cites the files), for the
emulator's state (harness.testing.engine_emulator)."""

from __future__ import annotations

import os
from typing import Any, Protocol

from harness.testing.emulator_state import Options, Rank

MP_HELP = "Multiprocess metric"  # what prometheus_client's MultiProcessCollector writes


class EmulatorView(Protocol):
    o: Options
    ranks: list[Rank]
    c: dict[str, float]
    created: float
    iterations: int


def go_float(v: float) -> str:
    """A float as prometheus_client writes it (floatToGoString)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    s = repr(float(v))
    dot = s.find(".")
    if v > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return s


def family(name: str, typ: str, help_: str, samples: list[tuple[dict[str, str], float]]
           ) -> list[str]:
    """One metric family in Prometheus text format 0.0.4, labels sorted as the client does."""
    lines = [f"# HELP {name} {help_}", f"# TYPE {name} {typ}"]
    for labels, value in samples:
        lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        lines.append(f"{name}{{{lab}}} {go_float(value)}" if lab else f"{name} {go_float(value)}")
    return lines


def render_vllm(em: EmulatorView) -> list[str]:
    """vllm/v1/metrics/loggers.py + vllm/v1/spec_decode/metrics.py: labels model_name and
    engine (the dp rank); plain prometheus_client, so counters carry `_created`."""
    def per_rank(key: str) -> list[tuple[dict[str, str], float]]:
        return [({"engine": str(r.idx), "model_name": em.o.model}, r.c.get(key, 0.0))
                for r in em.ranks]

    out: list[str] = []
    out += family("vllm:num_requests_running", "gauge",
                  "Number of requests in model execution batches.",
                  [({"engine": str(r.idx), "model_name": em.o.model}, len(r.active))
                   for r in em.ranks])
    for key, name, help_ in (
            ("prompt", "prompt_tokens", "Number of prefill tokens processed."),
            ("generation", "generation_tokens", "Number of generation tokens processed."),
            ("prefix_queries", "prefix_cache_queries",
             "Prefix cache queries, in terms of number of queried tokens."),
            ("prefix_hits", "prefix_cache_hits",
             "Prefix cache hits, in terms of number of cached tokens."),
            ("drafts", "spec_decode_num_drafts", "Number of spec decoding drafts."),
            ("draft_tokens", "spec_decode_num_draft_tokens", "Number of draft tokens."),
            ("accepted", "spec_decode_num_accepted_tokens", "Number of accepted tokens.")):
        out += counter(em, "vllm:" + name, help_, per_rank(key))
    pos = [({"engine": str(r.idx), "model_name": em.o.model, "position": str(i)}, v)
           for r in em.ranks for i, v in enumerate(r.per_pos)]
    out += counter(em, "vllm:spec_decode_num_accepted_tokens_per_pos",
                   "Accepted tokens per draft position.", pos)
    return out + vllm_cache(em)


def counter(em: EmulatorView, base: str, help_: str, samples: list[tuple[dict[str, str], float]]
             ) -> list[str]:
    """A prometheus_client Counter in the default registry: `_total` plus `_created`."""
    return (family(base + "_total", "counter", help_, samples)
            + family(base + "_created", "gauge", help_,
                     [(lab, em.created) for lab, _ in samples]))


def render_sglang(em: EmulatorView) -> list[str]:
    """SchedulerMetricsCollector gauges per rank (labels: model_name, engine_type, tp_rank,
    pp_rank, dp_rank when dp > 1), TokenizerMetricsCollector counters server-wide. Series
    exist only once set, as in multiprocess mode."""
    out: list[str] = []
    logged = [r for r in em.ranks if r.gauge is not None]
    for name, get in (("sglang:num_running_reqs", lambda r: len(r.active)),
                      ("sglang:spec_accept_length", lambda r: r.gauge),
                      ("sglang:spec_accept_rate", lambda r: r.gauge_rate)):
        if logged:
            out += family(name, "gauge", MP_HELP,
                          [(sglang_rank_labels(em, r), get(r)) for r in logged])
    lab = {"engine_type": "unified", "model_name": em.o.model}
    stream = {**lab, "is_streaming": "true"} if em.o.sglang_verify_counter else lab
    for key, name, labels in (("prompt", "prompt_tokens_total", stream),
                              ("generation", "generation_tokens_total", stream),
                              ("requests", "num_requests_total", stream),
                              ("verify_calls", "spec_verify_calls_total", lab)):
        if key == "verify_calls" and not em.o.sglang_verify_counter:
            continue
        if em.c.get(key):
            out += family("sglang:" + name, "counter", MP_HELP, [(labels, em.c[key])])
    return out + sglang_cache(em)


def sglang_rank_labels(em: EmulatorView, r: Rank) -> dict[str, str]:
    labels = {"engine_type": "unified", "model_name": em.o.model, "pp_rank": "0",
              "tp_rank": str(r.idx)}  # dp attention: attn_tp 1, tp rank = dp rank
    if em.o.dp > 1:
        labels["dp_rank"] = str(r.idx)
    return labels


def render_trtllm(em: EmulatorView) -> list[str]:
    """tensorrt_llm/metrics/collector.py under trtllm-serve's multiprocess registry:
    labels engine_type/model_name 'undefined'; gauges (mode 'all') carry the pid."""
    lab = {"engine_type": "undefined", "model_name": "undefined"}
    # The one counter the collector creates eagerly (its .labels() call in __init__).
    out = family("trtllm_prompt_cached_tokens_total", "counter", MP_HELP,
                 [(lab, em.c.get("cached", 0.0))])
    if em.iterations:
        out += family("trtllm_spec_decode_acceptance_length", "gauge", MP_HELP,
                      [({**lab, "pid": str(os.getpid())}, em.c.get("iter_al", 0.0))])
    for key, name in (("requests", "request_success_total"),
                      ("prompt", "prompt_tokens_total"),
                      ("generation", "generation_tokens_total"),
                      ("iter_draft_tokens", "spec_decode_num_draft_tokens_total"),
                      ("iter_accepted_tokens", "spec_decode_num_accepted_tokens_total")):
        if em.c.get(key):
            labels = {**lab, "finished_reason": "length"} if key == "requests" else lab
            out += family("trtllm_" + name, "counter", MP_HELP, [(labels, em.c[key])])
    for key, name in (("drafted_pos", "spec_decode_drafted_tokens_total"),
                      ("accepted_pos", "spec_decode_accepted_tokens_total")):
        pos = [({**lab, "token_position": str(i)}, em.c[f"{key}:{i}"])
               for i in range(em.o.k) if em.c.get(f"{key}:{i}")]
        if pos:
            out += family("trtllm_" + name, "counter", MP_HELP, pos)
    return out + trtllm_cache(em)


def atom_mtp(em: EmulatorView) -> dict[str, Any]:
    """ATOM's aggregated spec stats (LLMEngine.get_metrics_statistics), summed over ranks."""
    dist = {a: int(em.c.get(f"mtp_steps:{a}", 0)) for a in range(em.o.k + 1)}
    dist = {a: n for a, n in dist.items() if n}
    steps, drafted = sum(dist.values()), em.c.get("mtp_draft_tokens", 0.0)
    accepted = em.c.get("mtp_accepted_tokens", 0.0)
    return {"enabled": True, "total_draft_tokens": int(drafted),
            "total_accepted_tokens": int(accepted),
            "acceptance_rate": accepted / drafted if drafted else 0.0,
            "average_tokens_per_forward": 1 + accepted / steps if steps else 0.0,
            "distribution": dist}


def render_atom(em: EmulatorView) -> list[str]:
    """atom/entrypoints/openai/metrics.py: CounterMetricFamily/GaugeMetricFamily without
    labels (aggregated over dp ranks); counters render as `<name>_total`."""
    m = atom_mtp(em)
    out = family("atom:requests_running", "gauge",
                 "Number of requests currently running across data-parallel ranks.",
                 [({}, sum(len(r.active) for r in em.ranks))])
    for key, name, help_ in (
            ("requests", "requests_finished", "Number of requests completed by the scheduler."),
            ("prompt", "prompt_tokens", "Number of prompt tokens in completed requests."),
            ("generation", "generation_tokens",
             "Number of generated tokens in completed requests.")):
        out += family(f"atom:{name}_total", "counter", help_, [({}, em.c.get(key, 0.0))])
    out += family("atom:mtp_draft_tokens_total", "counter",
                  "Number of speculative draft tokens considered.",
                  [({}, m["total_draft_tokens"])])
    out += family("atom:mtp_accepted_tokens_total", "counter",
                  "Number of accepted speculative bonus tokens.",
                  [({}, m["total_accepted_tokens"])])
    out += family("atom:mtp_acceptance_rate", "gauge",
                  "Fraction of speculative draft tokens accepted.",
                  [({}, m["acceptance_rate"])])
    out += family("atom:mtp_average_tokens_per_forward", "gauge",
                  "Average emitted tokens per speculative decode forward.",
                  [({}, m["average_tokens_per_forward"])])
    out += family("atom:mtp_decode_steps_total", "counter",
                  "Number of speculative decode steps by accepted bonus-token count.",
                  [({"accepted_tokens": str(a)}, n) for a, n in m["distribution"].items()])
    return out + atom_cache(em)


# ---- prefix cache by source and KV usage (docs/engine-metrics.md, harness/engines/
# engine_counters.py cites what each engine writes) --------------------------------------------

def usage(em: EmulatorView, r: Rank) -> float:
    """A rank's KV usage: the tokens its requests hold over its pool (a fraction)."""
    return max(r.held_tokens, 0) / em.o.kv_pool_tokens


def vllm_cache(em: EmulatorView) -> list[str]:
    """Prompt tokens by source per engine, counted at admission; KV usage per engine (a
    fraction despite its name)."""
    src = [({"engine": str(r.idx), "model_name": em.o.model, "source": s},
            r.c.get(f"source:{s}", 0.0))
           for r in em.ranks for s in ("local_compute", "local_cache_hit", "external_kv_transfer")]
    return (counter(em, "vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", src)
            + family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent "
                     "usage.", [({"engine": str(r.idx), "model_name": em.o.model}, usage(em, r))
                                for r in em.ranks]))


def sglang_cache(em: EmulatorView) -> list[str]:
    """Tokenizer-side cached tokens by cache_source (at request finish); scheduler gauges per
    rank: token_usage, max_total_num_tokens, and HiCache's host tokens with a host tier."""
    lab = {"engine_type": "unified", "model_name": em.o.model}
    cached = [({**lab, "cache_source": s}, em.c[f"cached:{s}"]) for s in ("device", "host")
              if em.c.get(f"cached:{s}")]
    out = family("sglang:cached_tokens_total", "counter", MP_HELP, cached) if cached else []
    ranks = [sglang_rank_labels(em, r) for r in em.ranks]
    out += family("sglang:token_usage", "gauge", MP_HELP,
                  [(lab, usage(em, r)) for lab, r in zip(ranks, em.ranks, strict=True)])
    out += family("sglang:max_total_num_tokens", "gauge", MP_HELP,
                  [(lab, float(em.o.kv_pool_tokens)) for lab in ranks])
    if em.o.host_blocks:
        out += family("sglang:hicache_host_used_tokens", "gauge", MP_HELP,
                      [(lab, float(len(r.cache.host) * 64)) for lab, r in
                       zip(ranks, em.ranks, strict=True)])
        out += family("sglang:hicache_host_total_tokens", "gauge", MP_HELP,
                      [(lab, float(em.o.host_blocks * 64)) for lab in ranks])
    return out


def trtllm_cache(em: EmulatorView) -> list[str]:
    """Iteration-stats KV gauges of the one executor process (ranks pooled), per pid."""
    lab = {"engine_type": "undefined", "model_name": "undefined", "pid": str(os.getpid())}
    pool = em.o.kv_pool_tokens * len(em.ranks)
    held = sum(max(r.held_tokens, 0) for r in em.ranks)
    prompt, cached = em.c.get("prompt", 0.0), em.c.get("cached", 0.0)
    return (family("trtllm_kv_cache_utilization", "gauge", MP_HELP, [(lab, held / pool)])
            + family("trtllm_kv_cache_hit_rate", "gauge", MP_HELP,
                     [(lab, cached / prompt if prompt else 0.0)])
            + family("trtllm_kv_cache_max_blocks", "gauge", MP_HELP, [(lab, pool / 32)])
            + family("trtllm_kv_cache_tokens_per_block", "gauge", MP_HELP, [(lab, 32.0)]))


def atom_cache(em: EmulatorView) -> list[str]:
    """Aggregated over dp ranks, no labels."""
    held = sum(max(r.held_tokens, 0) for r in em.ranks)
    return (family("atom:prefix_cache_cached_tokens_total", "counter",
                   "Prompt tokens served from the prefix cache.", [({}, em.c.get("cached", 0.0))])
            + family("atom:prefix_cache_full_tokens_total", "counter",
                     "Prompt tokens looked up in the prefix cache.",
                     [({}, em.c.get("prompt", 0.0))])
            + family("atom:kv_cache_usage_ratio", "gauge", "KV-cache usage.",
                     [({}, held / (em.o.kv_pool_tokens * len(em.ranks)))]))
