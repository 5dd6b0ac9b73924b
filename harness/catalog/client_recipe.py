"""What a key's captured client calls fix for the whole key, as the recipe's scenario and seed
(harness/catalog/client_settings.py reads each call):

- the corpus an agentic key replays: the dataset its script fetches before AIPerf
  (`hf download --repo-type dataset ID`, resolve_trace_source in
  benchmarks/benchmark_lib.sh@843c6254 maps the key's WEKA_LOADER_OVERRIDE, or its model
  family's default, to that id), as scenario.dataset.id;
- AIPerf's `--random-seed` as the run seed (upstream fixes 42; without it the harness draws a
  new seed per run);
- benchmark_serving's `--use-chat-template` as scenario.chat_template (the harness's own
  default turns the template on only with a speculator), and its `--endpoint` as
  scenario.api (`/v1/chat/completions`: chat; the dsv4 TRT-LLM keys).

A value that differs between a key's launches cannot be one recipe setting: the writer refuses
the key, naming it, rather than ship one launch's value for all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.catalog.client_settings import client_settings
from harness.catalog.multinode import CatalogError


def corpus_of(c: Mapping[str, Any]) -> str | None:
    """The dataset id a launch's setup downloads for its client, None when none."""
    ids = [str(s["argv"][-1]) for s in c.get("setup") or []
           if [str(a) for a in s["argv"][:4]] == ["hf", "download", "--repo-type", "dataset"]]
    return ids[-1] if ids else None


def _one(key: str, what: str, values: list[Any]) -> Any:
    found = sorted({repr(v) for v in values})
    if len(found) > 1:
        raise CatalogError(f"{key}: launches differ in {what} ({', '.join(found)}); one recipe "
                           "setting cannot hold them")
    return values[0] if values else None


def client_recipe(key: str, ok: list[Mapping[str, Any]]) -> dict[str, Any]:
    """{"scenario": {...}, "seed": N} for the recipe document (keys only where captured)."""
    with_client = [c for c in ok if c.get("client")]
    settings = [client_settings(c.get("client"))[0] for c in with_client]
    out: dict[str, Any] = {}
    scenario: dict[str, Any] = {}
    agentic = [s for s in settings if s.get("dataset")]  # AIPerf replaying a public corpus
    if agentic:
        corpus = _one(key, "the corpus", [corpus_of(c) for c in with_client])
        if corpus is None:
            raise CatalogError(f"{key}: its script fetches no trace dataset before AIPerf; "
                               "the corpus it replays is unknown")
        scenario["dataset"] = {"id": corpus}
        seed = _one(key, "--random-seed", [s["random_seed"] for s in agentic])
        if seed:
            out["seed"] = int(seed)
    fixed = [s for s in settings if "chat_template" in s]
    if fixed:
        scenario["chat_template"] = bool(_one(key, "--use-chat-template",
                                              [s["chat_template"] for s in fixed]))
        scenario["api"] = str(_one(key, "the endpoint", [s["api"] for s in fixed]))
    if scenario:
        out["scenario"] = scenario
    return out
