"""The model's tokenizer, as the server tokenizes: from the GGUF (converted once, cached) or
from a Hugging Face id or path."""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from typing import Any

from harness.config.schema import ModelConfig
from harness.engines.weights import cache_dir, gguf_path

log = logging.getLogger(__name__)


@lru_cache(maxsize=4)
def _load(source: str, gguf_file: str | None) -> Any:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers import AutoTokenizer

    if gguf_file:
        return AutoTokenizer.from_pretrained(source, gguf_file=gguf_file)
    return AutoTokenizer.from_pretrained(source)


def load_tokenizer(model: ModelConfig) -> Any:
    """A fast Hugging Face tokenizer for `model`.

    GGUF-only models: transformers reads the tokenizer out of the GGUF (which needs torch),
    once; the result is saved under the harness cache and later loads need neither.
    """
    if model.tokenizer:
        return _load(model.tokenizer, None)
    if model.gguf.package or model.gguf.path:
        cached = cache_dir() / "tokenizers" / model.name
        if (cached / "tokenizer.json").is_file():
            return _load(str(cached), None)
        path = gguf_path(model)
        log.info("converting the tokenizer of %s from %s (once)", model.name, path.name)
        tok = _load(str(path.parent), path.name)
        tok.save_pretrained(str(cached))
        return tok
    return _load(model.hf_id, None)
