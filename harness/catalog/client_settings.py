"""Upstream's captured client call turned into our scenario's settings for that launch, and the
list of what our client cannot honour.

Fixed-seq-len keys run `utils/bench_serving/benchmark_serving.py` as run_benchmark_serving
builds it (benchmarks/benchmark_lib.sh@843c6254): `--random-range-ratio`, `--num-prompts`
(= 10 x CONC in every script), `--num-warmups` (2 x CONC), `--use-chat-template`, `--dsv4`,
`--backend`/`--endpoint`. Agentic keys run `aiperf profile --scenario inferencex-agentx-mvp`
(build_replay_cmd): corpus via `--public-dataset`, `--benchmark-duration`,
`--max-context-length`, `--warmup-requests-per-lane`, the trajectory start ratios,
`--trace-idle-gap-cap-seconds`, `--server-metrics` URLs; and from the call's environment the
routing headers AIPerf fills with the correlation id (`correlation_headers`), which the DP
rows export: `AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID=true` in front of sgl-router
(benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh@843c6254),
`AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID=1` in front of vllm-router
(dsv4_fp4_b300_vllm_mtp.sh@843c6254)."""

from __future__ import annotations

from typing import Any

# Flags whose effect our client reproduces without a setting (identity, output, bookkeeping).
BS_NEUTRAL = {"--model", "--base-url", "--dataset-name", "--random-input-len",
              "--random-output-len", "--max-concurrency", "--request-rate", "--ignore-eos",
              "--save-result", "--percentile-metrics", "--result-dir", "--result-filename",
              "--trust-remote-code", "--tokenizer", "--tokenizer-mode"}
BS_FLAGS_NO_VALUE = {"--ignore-eos", "--save-result", "--use-chat-template", "--dsv4",
                     "--trust-remote-code", "--profile"}
AIPERF_NEUTRAL = {"--scenario", "--url", "--endpoint", "--endpoint-type", "--streaming",
                  "--model", "--tokenizer", "--concurrency", "--stats-interval",
                  "--output-artifact-dir", "--no-gpu-telemetry", "--tokenizer-trust-remote-code",
                  "--use-server-token-count", "--slice-duration", "--failed-request-threshold",
                  "--num-dataset-entries"}
AIPERF_FLAGS_NO_VALUE = {"--streaming", "--no-gpu-telemetry", "--tokenizer-trust-remote-code",
                         "--use-server-token-count", "--unsafe-override",
                         "--use-dynamo-conv-aware-routing"}


def _options(argv: list[str], no_value: set[str]) -> dict[str, list[str]]:
    """flag -> its values (a flag may take several, as --server-metrics does)."""
    out: dict[str, list[str]] = {}
    flag = None
    for tok in argv:
        if tok.startswith("--"):
            name, eq, val = tok.partition("=")
            flag = None if name in no_value else name
            out.setdefault(name, [])
            if eq:
                out[name].append(val)
                flag = None
        elif flag is not None:
            out[flag].append(tok)
    return out


def benchmark_serving(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """(settings, unhonoured) for a benchmark_serving.py call."""
    o = _options(argv[2:], BS_FLAGS_NO_VALUE)
    conc = int(o["--max-concurrency"][0])
    s: dict[str, Any] = {
        "isl": int(o["--random-input-len"][0]), "osl": int(o["--random-output-len"][0]),
        "range_ratio": float(o["--random-range-ratio"][0]),
        "requests_per_conc": int(o["--num-prompts"][0]) / conc,
        "warmup_per_conc": int(o.get("--num-warmups", ["0"])[0]) / conc,
        "chat_template": "--use-chat-template" in o, "chat_encoder":
            "dsv4" if "--dsv4" in o else None,
        "api": "chat" if o.get("--endpoint", [""])[0].endswith("chat/completions") else
            "completions",
        "backend": o.get("--backend", [""])[0]}
    unhonoured = []
    for name in ("requests_per_conc", "warmup_per_conc"):
        if s[name] != int(s[name]):
            unhonoured.append(f"{name}={s[name]} is not a whole number per concurrency")
        s[name] = int(s[name]) if s[name] == int(s[name]) else s[name]
    if o.get("--request-rate", ["inf"])[0] != "inf":
        unhonoured.append(f"--request-rate {o['--request-rate'][0]} (the client runs closed-loop)")
    for flag in o:
        if flag not in BS_NEUTRAL and flag not in {"--random-range-ratio", "--num-prompts",
                                                   "--num-warmups", "--use-chat-template",
                                                   "--dsv4", "--backend", "--endpoint"}:
            unhonoured.append(f"benchmark_serving {flag}")
    return s, unhonoured


# AIPerf's switches of the headers it derives from X-Correlation-ID (harness.config.
# validate_scenario CORRELATION_HEADERS cites them), and the strings pydantic reads as true.
AIPERF_CORRELATION_ENV = {"AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID": "X-Session-ID",
                          "AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID":
                              "X-SMG-Routing-Key",
                          "AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID":
                              "X-Dynamo-Session-ID"}
_TRUE = {"1", "true", "t", "yes", "y", "on"}


def correlation_headers(env: dict[str, Any] | None) -> list[str]:
    """The routing headers an `aiperf profile` call's environment switches on."""
    env = env or {}
    return [h for var, h in AIPERF_CORRELATION_ENV.items()
            if str(env.get(var, "")).strip().lower() in _TRUE]


def aiperf(argv: list[str], env: dict[str, Any] | None = None
           ) -> tuple[dict[str, Any], list[str]]:
    """(settings, unhonoured) for an `aiperf profile` call and its environment."""
    o = _options(argv[2:], AIPERF_FLAGS_NO_VALUE)

    def one(flag: str) -> str | None:
        return o[flag][0] if o.get(flag) else None

    s: dict[str, Any] = {
        "dataset": one("--public-dataset"), "duration_s": float(one("--benchmark-duration") or 0),
        "max_context_length": int(one("--max-context-length") or 0) or None,
        "warmup_requests_per_lane": int(one("--warmup-requests-per-lane") or 10),
        "start_min_ratio": float(one("--trajectory-start-min-ratio") or 0.25),
        "start_max_ratio": float(one("--trajectory-start-max-ratio") or 0.75),
        "tree_cap_s": float(one("--trace-idle-gap-cap-seconds") or 300),
        "warmup_grace_s": float(one("--warmup-grace-period") or 0) or None,
        "random_seed": int(one("--random-seed") or 0), "server_metrics": o.get("--server-metrics",
                                                                               []),
        "extra_inputs": o.get("--extra-inputs", []),
        "dynamo_conv_aware_routing": "--use-dynamo-conv-aware-routing" in o}
    if correlation_headers(env):  # only where set, so captures made before keep their text
        s["correlation_headers"] = correlation_headers(env)
    known = {"--public-dataset", "--benchmark-duration", "--max-context-length",
             "--warmup-requests-per-lane", "--trajectory-start-min-ratio",
             "--trajectory-start-max-ratio", "--trace-idle-gap-cap-seconds", "--random-seed"}
    unhonoured = []
    if s["warmup_grace_s"] is not None:
        unhonoured.append(f"aiperf --warmup-grace-period {one('--warmup-grace-period')} "
                          "(our replay has no warmup drain deadline)")
    if s["server_metrics"]:
        unhonoured.append("aiperf --server-metrics (extra Prometheus endpoints are not scraped)")
    if s["extra_inputs"]:
        unhonoured.append(f"aiperf --extra-inputs {' '.join(s['extra_inputs'])}")
    if s["dynamo_conv_aware_routing"]:
        unhonoured.append("aiperf --use-dynamo-conv-aware-routing")
    for flag in o:
        if flag not in AIPERF_NEUTRAL and flag not in known and flag not in {
                "--warmup-grace-period", "--server-metrics", "--extra-inputs",
                "--use-dynamo-conv-aware-routing", "--unsafe-override"}:
            unhonoured.append(f"aiperf {flag}")
    return s, unhonoured


def client_settings(client: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Settings and unhonoured flags of a capture's client call ({} and [] when none)."""
    if not client:
        return {}, []
    if client.get("tool") == "aiperf":
        return aiperf(client["argv"], client.get("env"))
    return benchmark_serving(client["argv"])
