"""A recipe sweep that cannot have its tokenizer or checkpoint stops before anything starts:
one message naming the model, what is missing, where it looked and the fix (offline host, gated
model without a token, a repository the Hub lacks). The Hub is a real HTTP server on loopback
(HF_ENDPOINT); the cache a real huggingface_hub cache layout."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from harness.catalog.render import compose_recipe
from harness.engines.weights import WeightsNotFound, check_hub_access
from tests.helpers import harness

ROOT = Path(__file__).resolve().parents[2]
KEY = "dsr1-fp4-b200-sglang-mtp"


def _sc():
    return compose_recipe(yaml.safe_load((ROOT / "recipes" / "recipe" / f"{KEY}.yaml")
                                         .read_text()))


class _Hub(http.server.BaseHTTPRequestHandler):
    status = 200
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_HEAD(self) -> None:
        type(self).seen.append((self.path, self.headers.get("Authorization")))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[type[_Hub]]:
    handler = type("Hub", (_Hub,), {"status": 200, "seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(k, raising=False)
    yield handler
    server.shutdown()
    server.server_close()


def _snapshot(cache: Path, repo: str, filename: str) -> None:
    """One file of `repo` as huggingface_hub's cache lays it out."""
    d = cache / f"models--{repo.replace('/', '--')}"
    (d / "refs").mkdir(parents=True)
    (d / "refs" / "main").write_text("0" * 40)
    snap = d / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / filename).write_text("{}")


def test_reachable_hub_passes_and_asks_for_both(hub: type[_Hub]) -> None:
    check_hub_access(_sc())
    paths = sorted(p for p, _ in hub.seen)
    assert paths == ["/deepseek-ai/DeepSeek-R1-0528/resolve/main/tokenizer_config.json",
                     "/nvidia/DeepSeek-R1-0528-FP4-V2/resolve/main/config.json"]


def test_gated_model_names_token(hub: type[_Hub], monkeypatch: pytest.MonkeyPatch) -> None:
    hub.status = 401
    with pytest.raises(WeightsNotFound) as e:
        check_hub_access(_sc())
    msg = str(e.value)
    assert msg.startswith("model deepseek-r1: tokenizer deepseek-ai/DeepSeek-R1-0528 ")
    assert "gated or private and HF_TOKEN is not set" in msg
    assert "set HF_TOKEN" in msg and "\n" not in msg
    monkeypatch.setenv("HF_TOKEN", "t0k")
    hub.seen.clear()
    with pytest.raises(WeightsNotFound):
        check_hub_access(_sc())
    assert {a for _, a in hub.seen} == {"Bearer t0k"}


def test_cache_is_enough_without_the_hub(hub: type[_Hub], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(WeightsNotFound, match="HF_HUB_OFFLINE is set"):
        check_hub_access(_sc())
    _snapshot(tmp_path / "hub", "deepseek-ai/DeepSeek-R1-0528", "tokenizer.json")
    with pytest.raises(WeightsNotFound) as e:
        check_hub_access(_sc())
    assert "tokenizer" not in str(e.value).split(";")[0]  # only the weights are missing
    _snapshot(tmp_path / "hub", "nvidia/DeepSeek-R1-0528-FP4-V2", "config.json")
    check_hub_access(_sc())
    assert hub.seen == []


def test_unreachable_hub_is_one_fast_refusal(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(WeightsNotFound) as e:
        check_hub_access(_sc())
    msg = str(e.value)
    assert f"is not in the Hugging Face cache {tmp_path / 'hub'} and http://127.0.0.1:{port} " \
           "is unreachable" in msg
    assert "`hf download nvidia/DeepSeek-R1-0528-FP4-V2" in msg


def test_offline_recipe_sweep_stops_before_launch(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    r = harness("sweep", f"recipe={KEY}", f"results_dir={tmp_path / 'results'}", timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("harness:")]
    assert len(lines) == 1 and "model deepseek-r1" in lines[0] and "hf download" in lines[0]
    assert "Traceback" not in r.stderr


# A command naming a file inside its checkpoint (`--chat_template
# $MODEL_PATH/chat_template.jinja`, minimaxm3_fp4_b200_trt_mtp.sh@843c6254) as {model_dir}.
MODEL_DIR_KEY = "minimaxm3-fp4-b200-trtllm-agentic-mtp"
SNAPSHOT = ("/root/.cache/huggingface/hub/models--nvidia--MiniMax-M3-NVFP4/snapshots/"
            + "0" * 40 + "/chat_template.jinja")


def _model_dir_cache(cache: Path) -> None:
    _snapshot(cache, "MiniMaxAI/MiniMax-M3", "tokenizer.json")
    _snapshot(cache, "nvidia/MiniMax-M3-NVFP4", "config.json")


def test_dry_run_shows_the_checkpoint_directory_the_engine_sees(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """{model_dir} is the checkpoint's snapshot in the HF cache the engine's container mounts
    (~/.cache/huggingface at /root/.cache/huggingface), its revision read from refs/main; the
    sweep's checks pass with it cached."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HOME", raising=False)
    cache = tmp_path / "home" / ".cache" / "huggingface" / "hub"
    _model_dir_cache(cache)
    recipe = yaml.safe_load((ROOT / "recipes" / "recipe" / f"{MODEL_DIR_KEY}.yaml").read_text())
    check_hub_access(compose_recipe(recipe))
    r = harness("sweep", f"recipe={MODEL_DIR_KEY}", "concurrency=[1]", "--dry-run", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    argv = [ln for ln in r.stdout.splitlines() if "server argv:" in ln]
    assert argv and all(f"--chat_template {SNAPSHOT} " in ln for ln in argv), argv


def test_the_engine_mounts_the_cache_the_checks_read(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """HF_HUB_CACHE elsewhere than ~/.cache/huggingface/hub: the docker launch mounts that
    cache (the one the checks found the snapshot in) where huggingface_hub reads inside the
    image, so {model_dir} resolves, and the dry run shows the mount."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    _model_dir_cache(tmp_path / "elsewhere")
    recipe = yaml.safe_load((ROOT / "recipes" / "recipe" / f"{MODEL_DIR_KEY}.yaml").read_text())
    check_hub_access(compose_recipe(recipe))
    r = harness("sweep", f"recipe={MODEL_DIR_KEY}", "concurrency=[1]", "--dry-run", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{tmp_path / 'elsewhere'}:/root/.cache/huggingface/hub" in r.stdout \
        or f"{tmp_path / 'elsewhere'} -> /root/.cache/huggingface/hub" in r.stdout, r.stdout[-3000:]
    argv = [ln for ln in r.stdout.splitlines() if "server argv:" in ln]
    assert argv and all(f"--chat_template {SNAPSHOT} " in ln for ln in argv), argv


def test_a_command_reading_the_checkpoint_needs_it_in_the_cache(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The checkpoint in no cache: the snapshot's directory is unknown, so the sweep stops
    before any launch, naming {model_dir}, the cache and the fix."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    _snapshot(tmp_path / "elsewhere", "MiniMaxAI/MiniMax-M3", "tokenizer.json")
    recipe = yaml.safe_load((ROOT / "recipes" / "recipe" / f"{MODEL_DIR_KEY}.yaml").read_text())
    with pytest.raises(WeightsNotFound) as e:
        check_hub_access(compose_recipe(recipe))
    msg = str(e.value)
    assert "inside the checkpoint nvidia/MiniMax-M3-NVFP4 ({model_dir})" in msg
    assert str(tmp_path / "elsewhere") in msg
    assert "`hf download nvidia/MiniMax-M3-NVFP4` into that cache" in msg
