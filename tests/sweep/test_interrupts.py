"""The start-up SIGINT handler (harness.sweep.interrupts): raised where Python can deliver it,
only recorded inside the import machinery, and never lost (the next check() raises)."""

from __future__ import annotations

import signal
import sys
from types import SimpleNamespace

import pytest

from harness.sweep import interrupts


@pytest.fixture(autouse=True)
def _clean_request():
    interrupts._requested.clear()
    yield
    interrupts._requested.clear()


def test_raised_in_ordinary_code_and_recorded() -> None:
    with pytest.raises(KeyboardInterrupt):
        interrupts._on_sigint(signal.SIGINT, sys._getframe())
    with pytest.raises(KeyboardInterrupt):  # a swallowed one is still seen by the runner
        interrupts.check()


def test_inside_the_import_machinery_only_recorded_then_raised_by_check() -> None:
    frame = SimpleNamespace(f_code=SimpleNamespace(
        co_filename="<frozen importlib._bootstrap>"))
    interrupts._on_sigint(signal.SIGINT, frame)  # type: ignore[arg-type]  # no raise here
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()


def test_check_is_quiet_without_a_request() -> None:
    interrupts.check()
