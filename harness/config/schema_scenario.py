"""Schema of the scenarios group: what is sent and how it is judged, for fixed-sequence points
(shapes, prompts, arrivals) and agentic trace replay (the corpus and the replay scheduler's
rules, upstream's by default: docs/settings.md, docs/replay.md). Re-exported by
harness.config.schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from harness.config.fields import about, setting


@dataclass
class DatasetConfig:
    """A trace corpus published as a Hugging Face dataset (the AgentX corpus), streamed through
    `datasets` (docs/corpus.md). Set `id` or `local_dir`; both: the local copy of that id."""

    id: str | None = setting(
        None, help="Hub dataset id of the corpus, e.g. semianalysisai/cc-traces-weka-062126")
    revision: str | None = setting(
        None, help="the dataset's commit, tag or branch (refs/convert/parquet: the Parquet)")
    split: str = setting("train", help="the dataset split read")
    local_dir: str | None = setting(
        None, help="a local copy (traces.jsonl or Parquet), relative to the repository")
    data_files: list[str] = field(default_factory=list, metadata=about(
        "globs of the files inside the copy; []: detected"))
    cache_dir: str | None = setting(None, help="Hub cache for `id`; null: Hugging Face's")
    max_entries: int = setting(0, ge=0, fix="0 = every trace; AgentX uses 393",
                               help="the first N eligible traces (AgentX: 393); 0: all")
    max_context_tokens: int = setting(0, ge=0, fix="0 = no limit; e.g. 262144",
                                      help="drop traces whose longest in+out exceeds this; 0: keep")
    strict: bool = setting(
        True, help="AIPerf's WekaTrace schema: unknown and missing fields are errors; false: "
        "unknown fields ignored")


@dataclass
class ScenarioConfig:
    name: str = setting(MISSING, help="scenario id used in results, e.g. fixed-1k1k")
    kind: str = setting(
        MISSING, help="workload kind: fixed, agentic, ... (harness/workloads/registry.py)")
    isl: int = setting(0, help="fixed: input tokens per request, the longest (range_ratio)")
    osl: int = setting(0, help="fixed: output tokens per request, the longest (range_ratio)")
    range_ratio: float = setting(
        0.8, help="fixed: each request's ISL and OSL uniform in [ratio x L, L]")
    requests_per_conc: int = setting(
        10, ge=1, le=10_000, help="measured requests = this x concurrency",
        fix="e.g. scenario.requests_per_conc=10")
    warmup_per_conc: int = setting(2, ge=0, le=10_000, help="warmup requests = this x concurrency",
                                   fix="e.g. scenario.warmup_per_conc=2")
    # completions | chat; agentic scenarios ship with chat (/v1/chat/completions, as AgentX)
    api: str = setting(
        "completions", choices=("completions", "chat"), fix="use completions or chat",
        help="/v1/completions or /v1/chat/completions")
    chat_template: bool | None = setting(
        None, help="fixed: prompts through the chat template; null: on when a speculator runs")
    # inferencex: consecutive token ids from a random offset, as InferenceX's random dataset
    # (default); filtered: random draws from a vocabulary that re-tokenizes exactly on servers
    # whose tokenizer differs from Hugging Face's (llama.cpp)
    prompts: str = setting(
        "inferencex", help="fixed prompts: inferencex (random ids, as InferenceX) or filtered "
        "(re-tokenize exactly: llama.cpp)")
    # first: the warmup requests are copies of the first prompt (InferenceX); distinct: each
    # its own prompt
    warmup_prompts: str = setting(
        "first", help="warmup requests: first (copies of the first prompt, InferenceX) or "
        "distinct")
    sampling: dict[str, Any] = field(default_factory=dict, metadata=about(
        "sampling fields sent with every request, e.g. {temperature: 0.7}"))
    # Give every request its own sampling `seed` (derived from the run seed): reproducible
    # sampling, and reproducible forced acceptance (engines draw the accept uniforms per request).
    seed_requests: bool = setting(
        False, help="every request its own sampling seed from the run's: reproducible sampling")
    min_success: float = setting(0.95, ge=0, le=1, fix="a share in [0, 1], e.g. 0.95",
                                 help="a point with a smaller share of successes is invalid")
    # agentic trace replay
    trace_files: list[str] = field(default_factory=list, metadata=about(
        "agentic: trace files replayed, relative to the repository"))
    trace_format: str | None = setting(
        None, help="the traces' format: weka, mooncake or azure; null: recognised from the file")
    dataset: DatasetConfig = field(default_factory=DatasetConfig)  # or a corpus by name
    fit_mode: str = setting(
        "none", help="traces past the model's context: none, cap (drop, fit_cap_tokens) or "
        "scale (fit_factor)")
    fit_factor: int = setting(1, ge=1, help="scale: divide token counts and block size by this",
                              fix="1 keeps the trace; e.g. fit_factor=4 divides by 4")
    fit_cap_tokens: int = setting(0, ge=0, help="cap: drop requests with in + out above this",
                                  fix="0 = no cap; e.g. fit_cap_tokens=8192")
    duration_s: float = setting(900.0, gt=0, help="measured replay time per point",
                                fix="e.g. scenario.duration_s=900")
    min_measured_s: float = setting(
        900.0, ge=0, help="a shorter measured window is invalid (InferenceX: 900)",
        fix="e.g. scenario.min_measured_s=900")
    max_overflow_share: float = setting(0.01, ge=0, le=1, help="context overflows allowed",
                                        fix="a share in [0, 1], e.g. 0.01")
    max_failed_share: float = setting(0.10, ge=0, le=1, help="failed requests allowed",
                                      fix="a share in [0, 1], e.g. 0.10")
    # agentic replay scheduler (docs/replay.md): upstream's behaviour by default
    # inf or null: no cap
    idle_cap_s: float | None = setting(
        10.0, ge=0, inf_ok=True, fix="e.g. scenario.idle_cap_s=10, or inf for no cap",
        help="nothing in flight anywhere this long: every timer moves forward")
    tree_cap_s: float | None = setting(
        300.0, ge=0, inf_ok=True, fix="e.g. scenario.tree_cap_s=300, or inf for no cap",
        help="one session tree idle this long: its timers move forward")
    # upstream's rules by default; the others name this harness's earlier ones (docs/settings.md)
    start_seed: str = setting(
        "trace_lane", help="agentic: the seed of each lane's t*: trace_lane (AIPerf's) or trace")
    recycle: str = setting(
        "shared", help="agentic: the trace a lane plays after its tree: shared (AIPerf's "
        "sequence) or per_lane")
    subagent_start: str = setting(
        "branch_start", help="agentic: a sub-agent's first send: branch_start (AIPerf's) or "
        "spawn_end")
    request_style: str = setting(
        "aiperf", help="agentic request fields and headers: aiperf, or harness (temperature 0, "
        "max_tokens, no session headers)")
    session_affinity: str = setting(
        "stream", help="the X-Session-Affinity key: stream (its own id) or tree (the root's)")
    correlation_headers: list[str] = field(default_factory=list, metadata=about(
        "headers that also carry each request's X-Correlation-ID: X-Session-ID, "
        "X-SMG-Routing-Key, X-Dynamo-Session-ID; []: none, as upstream"))
    warmup_requests_per_lane: int = setting(
        10, ge=0, le=10_000, fix="e.g. scenario.warmup_requests_per_lane=10",
        help="one-token requests advancing each lane after primers")
    # each lane's start point t*: uniform in this share of its tree's recorded time span
    start_min_ratio: float = setting(
        0.25, ge=0, le=1, fix="a share in [0, 1], e.g. 0.25",
        help="a lane's start point t*: lowest share of its tree's span")
    start_max_ratio: float = setting(
        0.75, ge=0, le=1, fix="a share in [0, 1], e.g. 0.75",
        help="a lane's start point t*: highest share of its tree's span")
    join_rule: str = setting(
        "tiered", help="agentic: the parent turn that waits for a sub-agent: tiered or next_turn")
    pacing: str = setting(
        "end_to_start", help="agentic: the gap before a turn: end_to_start (AIPerf's), "
        "think_time or start_to_start")
    split_chains: bool = setting(
        True, help="agentic: an agent's parallel request chains replay as concurrent streams")
    primer_start: str = setting(
        "spread", help="agentic: when each lane's primers go: spread (AIPerf's) or burst")
    measured_window: str = setting(
        "requests", help="agentic throughput window: requests (first send to last end, AgentX) "
        "or deadline")
    # first_turn_prefix: AIPerf's "[rid:...]" marker before the first user message of every
    # request of a session tree (upstream); per_block: every block salted per session (no
    # sharing between sessions, system prefix included); none: no marker (docs/settings.md)
    cache_bust: str = setting(
        "first_turn_prefix", help="agentic cache-bust marker: first_turn_prefix (AIPerf's), "
        "per_block or none")
    # timestamped replay: the recorded arrival times divided by this (x the point's load level)
    speedup: float = setting(
        1.0, gt=0, help="timestamped replay: recorded arrival times divided by this",
        fix="e.g. scenario.speedup=10 (timestamped replay)")
    # fixed-sequence arrivals (docs/slo.md): closed (InferenceX's loop of C in flight, the
    # default) | poisson | gamma | constant: open loop at each rate of `request_rate` (req/s),
    # gaps as vLLM's `--request-rate` / `--burstiness` draw them
    arrival: str = setting(
        "closed", choices=("closed", "poisson", "gamma", "constant"),
        help="closed loop (C in flight) or open-loop arrivals at each request_rate")
    request_rate: list[float] = field(default_factory=list, metadata=about(
        "open loop: request rates (req/s), one point each"))
    burstiness: float = setting(
        1.0, help="gamma arrivals' shape: 1 = Poisson, < 1 burstier, > 1 more even (vLLM)")
    max_inflight: int = setting(
        0, help="open loop: most requests in flight (vLLM's --max-concurrency); 0: no cap")
    num_requests: int = setting(
        0, help="open loop: measured requests per point; 0: requests_per_conc x ceil(rate)")
    description: str = setting("", help="one line on the scenario (recorded, not used)")
