"""Schemas of a sweep's stages beside measuring points: the SLO, the SLO search, accuracy evals
and the lossless check (docs/slo.md, docs/evals.md). Re-exported by harness.config.schema."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.config.fields import about, setting


@dataclass
class SloConfig:
    """Per-request service-level objectives (vLLM's --goodput): a request is good when it meets
    every one that is set. None: not an objective."""

    # each positive where set: harness/config/validate_slo.py
    ttft_ms: float | None = setting(None, help="a good request's time to first token at most (ms)")
    tpot_ms: float | None = setting(
        None, help="a good request's time per output token at most (ms)")
    e2el_ms: float | None = setting(None, help="a good request's end-to-end latency at most (ms)")


@dataclass
class SearchConfig:
    """How the load levels are chosen (docs/slo.md): grid = every listed level; slo = the
    highest load whose points meet `criteria`, found by doubling then bisecting."""

    mode: str = setting("grid", choices=("grid", "slo"),
                        help="grid: every listed load; slo: the highest load meeting criteria")
    # statistic -> bound: p99_ttft_ms, p90_tpot_ms, median_e2el_ms (at most), goodput_share,
    # p50_intvty (at least). Every one must hold for a load to pass.
    criteria: dict[str, float] = field(default_factory=dict, metadata=about(
        "statistic -> bound every passing load meets, e.g. {p99_ttft_ms: 500}"))
    # 0 < lo < hi, resolution > 0, confirm >= 0: harness/config/validate_slo.py
    lo: float = setting(1, help="lowest load of the search (concurrency, or rate open loop)")
    hi: float = setting(64, help="highest load of the search")
    resolution: float = setting(1, help="stop bisecting when failing - passing load <= this")
    confirm: int = setting(1, help="extra repeats of the highest passing and lowest failing load")


@dataclass
class EvalConfig:
    """Accuracy evals run after a job's points against the same server (harness.evals;
    docs/evals.md). InferenceX's settings (benchmarks/benchmark_lib.sh run_lm_eval) where
    a value is null."""

    tasks: list[str] = field(default_factory=list, metadata=about(
        "accuracy evals after the job's points: gsm8k, gpqa_diamond, swebench_lite"))
    data_dir: str | None = setting(
        None, help="a local copy of the eval data, relative to the repository; null: the Hub")
    limit: int | None = setting(None, ge=1, fix="e.g. eval.limit=50, or null for the whole split",
                                help="the first N documents (EVAL_LIMIT); null: the whole split")
    num_fewshot: int | None = setting(None, ge=0, le=64, fix="e.g. eval.num_fewshot=5",
                                      help="null: the task's (GSM8K 5, GPQA 0)")
    concurrency: int | None = setting(
        None, ge=1, le=4096, fix="e.g. eval.concurrency=64",
        help="null: the job's highest concurrency (upstream: CONC)")
    max_length: int = setting(16384, ge=256, fix="e.g. eval.max_length=16384",
                              help="EVAL_MAX_MODEL_LEN's default, capped at the model's context")
    max_gen_toks: int | None = setting(None, ge=1, fix="e.g. eval.max_gen_toks=256",
                                       help="null: max_length - 4096, or half of it (upstream)")
    timeout_s: float = setting(1800.0, gt=0, fix="e.g. eval.timeout_s=1800",
                               help="seconds per request (upstream's timeout=1800)")
    system_instruction: str | None = setting(
        None, help="system prompt of every eval request; null: none (as upstream)")


@dataclass
class LosslessConfig:
    """The lossless-speculation check on every speculative job (harness.evals.lossless):
    the same prompts with and without the speculator on the same engine build."""

    # auto: every speculative job at real acceptance on an engine it launches | on: injected
    # jobs too (a launch with real verification) | off
    mode: str = setting("auto", choices=("auto", "on", "off"), fix="use auto, on or off",
                        help="auto: speculative jobs at real acceptance; on: injected too; off")
    prompts: int = setting(8, ge=1, le=50, fix="e.g. lossless.prompts=8 (the slice has 50)",
                           help="GSM8K questions from the shipped slice, chat template")
    max_tokens: int = setting(48, ge=1, le=4096, fix="e.g. lossless.max_tokens=48",
                              help="tokens generated per prompt")
    temperatures: list[float] = field(default_factory=lambda: [0.0], metadata=about(
        "temperatures compared: 0 checks token identity, above 0 the distributions"))
    samples: int = setting(24, ge=2, le=10_000, fix="e.g. lossless.samples=24",
                           help="continuations per prompt and side above temperature 0")
    positions: int = setting(8, ge=1, le=4096, fix="e.g. lossless.positions=8",
                             help="above 0: a two-sample test per position over the first N tokens")
    alpha: float = setting(0.01, gt=0, le=1, fix="a significance level in (0, 1), e.g. 0.01",
                           help="above 0: family-wise significance (Bonferroni over the tests)")
    # T=0 with requests in flight and not a clean identity (the control did not repeat
    # itself, or the speculator diverged): compare again one request at a time, where
    # batching cannot move the numerics; false leaves the batched verdict alone
    serial_retry: bool = setting(
        True, help="T=0, batched and not a clean identity: compare again one request at a time")
    # T=0: a divergence where the reference preferred its own token by at most this many nats
    # (from its top logprobs) is a near-tie that floating-point differences flip (a batched
    # verify pass against one-token decoding; measured here up to 0.12 nats, docs/evals.md);
    # it does not make the verdict lossy, and the verdict says so. 0 = strict
    tie_margin: float = setting(0.25, ge=0, fix="nats, e.g. lossless.tie_margin=0.25 (0 = strict)",
                                help="T=0: nats within which a divergence is a near-tie")
    top_logprobs: int = setting(
        5, ge=0, le=20, fix="e.g. lossless.top_logprobs=5 (0: margins unknown)",
        help="T=0: log-probabilities asked per position (the margins' source)")
