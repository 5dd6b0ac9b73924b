"""Hydra reads every recipe file through OmegaConf's YAML loader, PyYAML's pure-Python parser:
about a third of a compose's CPU time. `install()` gives OmegaConf the same loader on top of
libyaml's C parser (PyYAML's `CSafeLoader`), with OmegaConf's own tag resolvers, constructors
and duplicate-key check, so a file loads to the same data. A file the C parser refuses is read
again by OmegaConf's own loader, so a broken file gets the same error, message and line as
before (tests/config/test_fast_yaml.py holds both to that over every shipped YAML file)."""

from __future__ import annotations

import functools
from typing import Any

import yaml
from omegaconf import _utils as omegaconf_utils

_original_loader = omegaconf_utils.get_yaml_loader


@functools.cache
def reference_loader() -> Any:
    """OmegaConf's own loader class (built once; OmegaConf builds a fresh class per load)."""
    return _original_loader()


@functools.cache
def fast_loader() -> Any:
    """OmegaConf's loader with the C parser, or OmegaConf's own where PyYAML lacks libyaml."""
    ref = reference_loader()
    if not yaml.__with_libyaml__:
        return ref

    class FastOmegaConfLoader(yaml.CSafeLoader):  # type: ignore[misc, name-defined]
        # the same tables, so scalars resolve and tags construct exactly as in OmegaConf's
        yaml_implicit_resolvers = ref.yaml_implicit_resolvers
        yaml_constructors = ref.yaml_constructors
        yaml_multi_constructors = ref.yaml_multi_constructors

        def __init__(self, stream: Any) -> None:
            self._stream = stream
            self._start = stream.tell() if hasattr(stream, "seekable") and stream.seekable() \
                else None
            super().__init__(stream)

        def construct_mapping(self, node: yaml.Node, deep: bool = False) -> Any:
            # OmegaConf's check: a key given twice in one mapping is an error, not last-wins
            keys = set()
            for key_node, _ in node.value:
                if key_node.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                    continue
                if key_node.value in keys:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {key_node.value}", key_node.start_mark)
                keys.add(key_node.value)
            return super().construct_mapping(node, deep=deep)

        def get_single_data(self) -> Any:
            try:
                return super().get_single_data()
            except yaml.YAMLError:
                if self._start is None and hasattr(self._stream, "read"):
                    raise  # a stream already consumed cannot be read again
                if self._start is not None:
                    self._stream.seek(self._start)
                slow = ref(self._stream)
                try:
                    return slow.get_single_data()  # raises, worded as OmegaConf words it
                finally:
                    slow.dispose()

    return FastOmegaConfLoader


def install() -> None:
    """Make OmegaConf (and so Hydra, and harness.config.groups.load_yaml) load YAML with
    fast_loader() in this process. Idempotent."""
    omegaconf_utils.get_yaml_loader = fast_loader
