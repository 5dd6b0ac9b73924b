"""A Hugging Face checkpoint converted once from a model's GGUF (vLLM needs safetensors).

transformers reads the GGUF; `save_pretrained` refuses a GGUF-loaded model ("quantized with
gguf"), so a clean model is built from the loaded config without `quantization_config`, given
the dequantized weights, and saved (bf16). Cached under the harness cache by model name.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from harness.config.schema import ModelConfig
from harness.engines.weights import cache_dir, gguf_path

log = logging.getLogger(__name__)


def hf_checkpoint(model: ModelConfig) -> Path:
    out = cache_dir() / "hf" / model.name
    if (out / "config.json").is_file() and any(out.glob("*.safetensors")):
        return out
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    src = gguf_path(model)
    log.info("converting %s to a Hugging Face checkpoint (once) in %s", src.name, out)
    loaded = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name,
                                                  dtype=torch.bfloat16)
    config = AutoConfig.from_pretrained(str(src.parent), gguf_file=src.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    clean = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    clean.load_state_dict(loaded.state_dict())
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    clean.save_pretrained(str(tmp))
    AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name).save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out
