"""NVIDIA Dynamo's real frontend with two mocker workers, disaggregated (prefill -> decode), on
loopback: the argv and environment of docs/multinode.md ("Dynamo's frontend and mocker here").

Needs .venv-dynamo (harness/testing/dynamo_env.sh); skipped without it unless
HARNESS_REQUIRE_DYNAMO is set, then it fails.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-dynamo"
MODEL = VENV / "model" / "smollm2"
HOST = "127.0.0.1"
MODEL_NAME = "smollm2"
PLANES = ["--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dynamo_python() -> Path:
    python = VENV / "bin" / "python"
    if python.is_file() and (MODEL / "tokenizer.json").is_file():
        return python
    why = f"{VENV} is not installed (harness/testing/dynamo_env.sh)"
    if os.environ.get("HARNESS_REQUIRE_DYNAMO"):
        pytest.fail(f"HARNESS_REQUIRE_DYNAMO is set but {why}")
    pytest.skip(why)


def free_port(below: int = 65536) -> int:
    """A port free on HOST now. Dynamo parses DYN_SYSTEM_PORT as an i16: those stay < 32768."""
    rng = random.Random()
    while True:
        port = rng.randrange(20000, below)
        with socket.socket() as s, contextlib.suppress(OSError):
            s.bind((HOST, port))
            return port


def role_env(kv_dir: Path, broker: str, **extra: str) -> dict[str, str]:
    """Every address a Dynamo process binds or advertises, pinned to HOST."""
    return {
        **os.environ,
        "DYN_FILE_KV": str(kv_dir),               # file discovery root, shared by all roles
        "DYN_TCP_RPC_HOST": HOST,                 # worker request-plane server
        "DYN_TCP_RESPONSE_STREAM_HOST": HOST,     # frontend response-stream server
        "DYN_EVENT_PLANE_HOST": HOST,             # advertised event-plane address
        "DYN_SYSTEM_HOST": HOST,                  # worker /metrics /health server
        "DYN_ZMQ_BROKER_URL": broker,             # publishers connect; nothing binds 0.0.0.0
        **extra,
    }


def get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection(HOST, port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    except OSError:
        return 0, ""
    finally:
        conn.close()


def listeners(pids: list[int]) -> set[tuple[str, int, int]]:
    """(address, port, pid) of every IPv4/IPv6 TCP listening socket the given processes hold."""
    by_inode: dict[str, tuple[str, int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A":  # LISTEN
                continue
            addr_hex, port_hex = f[1].split(":")
            raw = bytes.fromhex(addr_hex)
            if len(raw) == 4:
                addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                addr = socket.inet_ntop(socket.AF_INET6, words)
            by_inode[f[9]] = (addr, int(port_hex, 16))
    found = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(fd))
                if m and m.group(1) in by_inode:
                    found.add((*by_inode[m.group(1)], pid))
    return found


def metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        m = re.fullmatch(rf"{re.escape(name)}\{{(.*)\}} (\S+)", line)
        if m and all(f'{k}="{v}"' in m.group(1) for k, v in labels.items()):
            total += float(m.group(2))
    return total


@contextlib.contextmanager
def started(procs: dict[str, subprocess.Popen], logs: Path) -> Iterator[None]:
    try:
        yield
    except BaseException:
        for name in procs:
            print(f"--- {name} log tail ---\n{(logs / f'{name}.log').read_text()[-3000:]}")
        raise
    finally:
        for proc in procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def stream_chat(port: int, max_tokens: int, headers: dict[str, str]) -> tuple[int, list[str], dict]:
    body = {"model": MODEL_NAME, "max_tokens": max_tokens, "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "Tell me about the sea."}]}
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"content-type": "application/json", **headers})
    resp = conn.getresponse()
    pieces: list[str] = []
    usage: dict = {}
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: {"):
            continue
        chunk = json.loads(line[len("data: "):])
        assert "error" not in chunk, chunk
        for choice in chunk.get("choices") or ():
            if choice.get("delta", {}).get("content"):
                pieces.append(choice["delta"]["content"])
        usage = chunk.get("usage") or usage
    conn.close()
    return resp.status, pieces, usage


def test_frontend_prefill_decode_on_loopback(dynamo_python: Path, tmp_path: Path) -> None:
    http_port, xsub, xpub = (free_port() for _ in range(3))
    prefill_sys, decode_sys = (free_port(below=32768) for _ in range(2))
    broker = f"xsub=tcp://{HOST}:{xsub} , xpub=tcp://{HOST}:{xpub}"
    kv = tmp_path / "kv"
    kv.mkdir()
    mocker = [str(dynamo_python), "-m", "dynamo.mocker", *PLANES, "--model-path", str(MODEL),
              "--model-name", MODEL_NAME, "--disaggregation-mode"]
    roles = {
        "broker": ([str(dynamo_python), str(REPO / "harness/testing/zmq_broker.py"),
                    f"tcp://{HOST}:{xsub}", f"tcp://{HOST}:{xpub}"], {}),
        "frontend": ([str(dynamo_python), "-m", "dynamo.frontend", *PLANES,
                      "--http-host", HOST, "--http-port", str(http_port)], {}),
        "prefill": ([*mocker, "prefill"], {"DYN_SYSTEM_PORT": str(prefill_sys)}),
        "decode": ([*mocker, "decode"], {"DYN_SYSTEM_PORT": str(decode_sys)}),
    }
    procs: dict[str, subprocess.Popen] = {}
    with started(procs, tmp_path):
        t0 = time.monotonic()
        for name, (argv, extra) in roles.items():
            with open(tmp_path / f"{name}.log", "wb") as log:
                procs[name] = subprocess.Popen(argv, env=role_env(kv, broker, **extra),
                                               stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True, cwd=tmp_path)

        # Ready: the model is listed only once a decode worker AND a prefill worker registered.
        def ready() -> bool:
            for name, proc in procs.items():
                assert proc.poll() is None, f"{name} exited with {proc.returncode}"
            status, models = get(http_port, "/v1/models")
            return status == 200 and MODEL_NAME in models
        wait_for(ready, 60, "the frontend to list the model")
        _, health = get(http_port, "/health")
        for endpoint in ("dyn://dynamo.prefill.generate", "dyn://dynamo.backend.generate"):
            assert endpoint in health, health
        print(f"ready after {time.monotonic() - t0:.1f} s")

        status, pieces, usage = stream_chat(http_port, 24, {
            "X-Dynamo-Session-ID": "session-a", "X-Dynamo-Parent-Session-ID": "root-a"})
        assert status == 200
        assert len(pieces) == 24 and "".join(pieces).strip()
        assert usage["completion_tokens"] == 24 and usage["prompt_tokens"] > 5

        # Both workers served it: each counts one request on its generate endpoint.
        _, prefill_metrics = get(prefill_sys, "/metrics")
        _, decode_metrics = get(decode_sys, "/metrics")
        _, frontend_metrics = get(http_port, "/metrics")
        assert metric(prefill_metrics, "dynamo_component_requests_total",
                      dynamo_component="prefill", dynamo_endpoint="generate") == 1
        assert metric(decode_metrics, "dynamo_component_requests_total",
                      dynamo_component="backend", dynamo_endpoint="generate") == 1
        assert metric(frontend_metrics, "dynamo_frontend_requests_total",
                      model=MODEL_NAME, status="success") == 1

        # Every listening socket of every role is on loopback.
        held = listeners([p.pid for p in procs.values()])
        assert {a for a, _, _ in held} == {HOST}, sorted(held)
        assert {http_port, prefill_sys, decode_sys, xsub, xpub} <= {p for _, p, _ in held}

    for name, proc in procs.items():
        assert proc.returncode is not None, f"{name} still running"
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)
