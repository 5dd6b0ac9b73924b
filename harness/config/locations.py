"""Where the checkout is, and the sizing margin every server gets: facts that engines,
workloads and validation all need, kept apart so none of them imports another for them."""

from __future__ import annotations

from pathlib import Path

CONTEXT_MARGIN = 256  # tokens beyond ISL+OSL a server is sized for (chat template, BOS)


def repo_root() -> Path:
    """The checkout that holds recipes/ and scenarios/ (this package lives inside it)."""
    return Path(__file__).resolve().parents[2]
