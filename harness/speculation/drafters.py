"""Which speculator a captured server runs, read from its argv, environment and files.

The catalog importer maps a launch it captured from an InferenceX script to `speculator=<recipe>`
(`recipes/speculator/<method>.yaml`) and `speculator.k`, `speculator.draft_model`,
`speculator.sample_method`, so the acceptance lookup keys on what the engine runs. One rule per
engine, as each engine's own flags spell it (argv shapes from InferenceX@843c6254
benchmarks/single_node/):

- vLLM (`vllm serve`, `dynamo.vllm`): `--speculative-config` JSON. method: its `method`
  (`*_mtp` -> mtp; none with a `model` -> draft_model); k: `num_speculative_tokens`; drafter:
  `model`; sample method: `draft_sample_method` probabilistic -> probabilistic, and with
  `rejection_sample_method` block -> probabilistic-block, else greedy; injected AL:
  `synthetic_acceptance_length` under `rejection_sample_method` synthetic.
- SGLang: `--speculative-algorithm` EAGLE/NEXTN without a draft path -> mtp (an MTP head runs
  through the EAGLE path), EAGLE with one -> eagle, EAGLE3 -> eagle3, STANDALONE ->
  draft_model, NGRAM -> ngram; k: `--speculative-num-steps`; drafter:
  `--speculative-draft-model-path`; greedy; injected AL: env SGLANG_SIMULATE_ACC_LEN.
- TensorRT-LLM: the options YAML (`--config` / `--extra_llm_api_options`)
  `speculative_config.decoding_type` MTP / Eagle, Eagle3 -> eagle3 / NGram / DraftTarget; k:
  `num_nextn_predict_layers` or `max_draft_len`; drafter: `speculative_model(_dir)`; greedy;
  injected AL: env TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS + 1 (it counts drafts only).
- ATOM: `--method` (mtp, eagle3, dspark); k: `--num-speculative-tokens` (ATOM's default 1);
  drafter: `--draft-model`; sample method None; injected AL: `--spec-decode-acceptance-length`,
  or 1 + `--spec-decode-acceptance-rate` x k.

ATOM's sample method is None, not greedy: its scripts inject a curve they choose
(agentic/kimik3_fp4_mi355x_atom_mtp.sh injects the probabilistic Kimi-K3 DSpark curve), so the
importer picks the curve whose value at k is the injected AL
(`harness.speculation.acceptance.lookup` with each sample method). Pure: nothing here reads a
file or starts a process.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

# vLLM's MTP methods are named per model family (deepseek_mtp, qwen3_next_mtp, ...).
VLLM_ALIASES = {"eagle3": "eagle3", "eagle": "eagle", "dspark": "dspark", "ngram": "ngram",
                "draft_model": "draft_model", "mtp": "mtp", "suffix": "suffix"}
SGLANG_ALGORITHMS = {"EAGLE3": "eagle3", "STANDALONE": "draft_model", "NGRAM": "ngram",
                     "LOOKAHEAD": "lookahead"}
TRTLLM_TYPES = {"mtp": "mtp", "eagle": "eagle3", "eagle3": "eagle3", "ngram": "ngram",
                "drafttarget": "draft_model"}


def flag_value(argv: list[str], *flags: str) -> str | None:
    """The value of the last of `flags` in argv (`--f v` or `--f=v`), else None."""
    found = None
    for i, a in enumerate(argv):
        for f in flags:
            if a == f and i + 1 < len(argv):
                found = argv[i + 1]
            elif a.startswith(f + "="):
                found = a[len(f) + 1:]
    return found


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def speculator_from_server_argv(engine_kind: str, argv: list[str], env: dict[str, str],
                                files: dict[str, str] | None = None) -> dict[str, Any] | None:
    """{method, k, draft_model, sample_method, acceptance_length} of the speculation this server
    command runs, or None when it runs none. `files`: path -> text of the files the command
    reads (TensorRT-LLM's options YAML). `acceptance_length` is the AL the command injects
    (None: real acceptance). Raises ValueError on an engine kind it does not know."""
    kind = engine_kind.lower()
    if kind in ("vllm", "dynamo-vllm"):
        return _vllm(argv)
    if kind in ("sglang", "dynamo-sglang"):
        return _sglang(argv, env)
    if kind in ("trtllm", "trt", "dynamo-trt"):
        return _trtllm(argv, env, files or {})
    if kind == "atom":
        return _atom(argv)
    raise ValueError(f"unknown engine kind {engine_kind!r}: vllm, sglang, trtllm or atom")


def _result(method: str, k: int, draft: str | None, sample: str | None,
            al: float | None) -> dict[str, Any]:
    return {"method": method, "k": k, "draft_model": draft or None, "sample_method": sample,
            "acceptance_length": al}


def _vllm(argv: list[str]) -> dict[str, Any] | None:
    text = flag_value(argv, "--speculative-config", "--speculative_config")
    if text is None:
        return None
    cfg = json.loads(text)
    k = int(cfg.get("num_speculative_tokens") or 0)
    if k < 1:
        return None
    raw = str(cfg.get("method") or "")
    method = ("mtp" if raw.endswith("_mtp") else VLLM_ALIASES.get(raw, raw)) if raw else (
        "draft_model" if cfg.get("model") else "")
    if not method:
        raise ValueError(f"--speculative-config names no method and no model: {text}")
    sample = "greedy"
    if cfg.get("draft_sample_method") == "probabilistic":
        sample = ("probabilistic-block" if cfg.get("rejection_sample_method") == "block"
                  else "probabilistic")
    al = (_number(str(cfg.get("synthetic_acceptance_length")))
          if cfg.get("rejection_sample_method") == "synthetic" else None)
    return _result(method, k, cfg.get("model"), sample, al)


def _sglang(argv: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    algo = flag_value(argv, "--speculative-algorithm", "--speculative-algo")
    if not algo:
        return None
    draft = flag_value(argv, "--speculative-draft-model-path", "--speculative-draft-model")
    name = algo.upper()
    if name in ("EAGLE", "NEXTN"):
        method = "eagle" if draft else "mtp"  # an MTP head runs through SGLang's EAGLE path
    else:
        method = SGLANG_ALGORITHMS.get(name, name.lower())
    k = int(flag_value(argv, "--speculative-num-steps") or 0)
    if k < 1:  # NGRAM: its draft tokens; EAGLE without steps: SGLang's default
        k = max(int(flag_value(argv, "--speculative-num-draft-tokens") or 1) - 1, 1)
    return _result(method, k, draft, "greedy", _number(env.get("SGLANG_SIMULATE_ACC_LEN")))


def _trtllm(argv: list[str], env: dict[str, str], files: dict[str, str]
            ) -> dict[str, Any] | None:
    path = flag_value(argv, "--extra_llm_api_options", "--config")
    texts = [files[path]] if path in files else list(files.values())
    spec: dict[str, Any] | None = None
    for text in texts:
        doc = yaml.safe_load(text)
        if isinstance(doc, dict) and isinstance(doc.get("speculative_config"), dict):
            spec = doc["speculative_config"]
            break
    if spec is None:
        return None
    dtype = str(spec.get("decoding_type", "")).lower()
    method = TRTLLM_TYPES.get(dtype, dtype)
    k = int(spec.get("num_nextn_predict_layers") or spec.get("max_draft_len") or 0)
    draft = spec.get("speculative_model") or spec.get("speculative_model_dir")
    forced = _number(env.get("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"))
    return _result(method, k, draft, "greedy", None if forced is None else forced + 1)


def _atom(argv: list[str]) -> dict[str, Any] | None:
    method = flag_value(argv, "--method")
    if not method:
        return None
    k = int(flag_value(argv, "--num-speculative-tokens") or 1)  # ATOM's default is 1
    al = _number(flag_value(argv, "--spec-decode-acceptance-length"))
    rate = _number(flag_value(argv, "--spec-decode-acceptance-rate"))
    if al is None and rate is not None:
        al = round(1 + rate * k, 4)
    return _result(method, k, flag_value(argv, "--draft-model"), None, al)
