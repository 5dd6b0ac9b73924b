"""The client's settings for one launch as a sweep would run it: what `harness catalog show
--json` prints beside the server, and what tests/catalog/test_catalog_render.py compares with the
captured client call (harness/catalog/client_settings.py reads that call).

Fixed-sequence: lengths, range ratio, requests and warmups per concurrency, the API, and
whether the prompt goes through the chat template, by FixedSequenceWorkload's own rule.
Agentic: the corpus (id, revision, entries), the seed (None: drawn per run), the measured
duration, warmups per lane, the lanes' start ratios, the idle caps, the failure threshold and
the routing headers, and the replay's own rules (request style, cache bust, pacing, joins,
recycling; docs/replay.md) as composed."""

from __future__ import annotations

from typing import Any

from harness.config.schema import SweepConfig
from harness.workloads.fixed_seq import FixedSequenceWorkload
from harness.workloads.registry import workload_class


def client_view(sc: SweepConfig) -> dict[str, Any]:
    s = sc.scenario
    out: dict[str, Any] = {"scenario": s.name, "kind": s.kind, "api": s.api, "seed": sc.seed}
    if workload_class(s.kind).has_sessions:  # the session replay's settings
        d = s.dataset
        out.update({
            "dataset": {"id": d.id, "revision": d.revision, "local_dir": d.local_dir,
                        "max_entries": d.max_entries},
            "duration_s": s.duration_s, "warmup_requests_per_lane": s.warmup_requests_per_lane,
            "start_min_ratio": s.start_min_ratio, "start_max_ratio": s.start_max_ratio,
            "tree_cap_s": s.tree_cap_s, "idle_cap_s": s.idle_cap_s,
            "max_failed_share": s.max_failed_share,
            "correlation_headers": list(s.correlation_headers),
            "min_measured_s": s.min_measured_s, "max_overflow_share": s.max_overflow_share,
            "request_style": s.request_style, "cache_bust": s.cache_bust,
            "session_affinity": s.session_affinity, "pacing": s.pacing,
            "split_chains": s.split_chains, "join_rule": s.join_rule,
            "primer_start": s.primer_start, "measured_window": s.measured_window,
            "recycle": s.recycle, "start_seed": s.start_seed,
            "subagent_start": s.subagent_start,
            "fit": {"mode": s.fit_mode, "factor": s.fit_factor, "cap_tokens": s.fit_cap_tokens},
            "sampling": dict(s.sampling), "seed_requests": s.seed_requests})
        return out
    # the workload's own rule, on an instance that holds only the config (no tokenizer needed)
    workload = FixedSequenceWorkload.__new__(FixedSequenceWorkload)
    workload.sc = sc
    out.update({"isl": s.isl, "osl": s.osl, "range_ratio": s.range_ratio,
                "requests_per_conc": s.requests_per_conc, "warmup_per_conc": s.warmup_per_conc,
                "chat_template": workload.chat_template(), "duration_s": s.duration_s,
                "prompts": s.prompts, "warmup_prompts": s.warmup_prompts,
                "sampling": dict(s.sampling), "seed_requests": s.seed_requests,
                "min_success": s.min_success, "arrival": s.arrival})
    return out
