"""Every shipped single-node catalog key end to end in attach mode against an emulator of its
engine: `harness catalog verify-e2e [--keys GLOB,...]`, which runs
`python -m harness.testing.catalog_e2e` (the CLI sits below this package in
docs/architecture.md, so it starts this module rather than importing it).

Per key (harness/sweep/attach_check.py): the recipe composed as `harness sweep recipe=KEY`
composes it, one launch chosen (the smallest concurrency, a router row first when the key has
one), the point run in this process by the sweep's job runner against the emulator, the
injected AL verified by the harness's `acceptance_realised` rule.

Emulators: one per (engine, dp, router), started once and reused by every key of that shape,
retuned to each key's AL and k through `POST /debug/acceptance`
(harness/testing/emulator_tunable.py); a router row gets the router emulator in front
(harness/testing/router_emulator.py) with the engine's own /metrics scraped behind it, as
upstream's agentic DP-attention rows do. Keys without speculation run the emulator at AL 1.
A spec key whose AL the acceptance table lacks runs at its own default acceptance mode (real,
for a fixed key) and fails as not verified.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import io
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson

from harness.config.locations import repo_root
from harness.sweep.attach_check import (
    AGENTIC_S,
    KeyPoint,
    KeyResult,
    Short,
    plan_key,
    run_key,
    table,
    unplanned,
)
from harness.testing.self_gate import tokenizer_file
from harness.testing.spawn import spawn_server

# SGLang's AL is a gauge sampled once a second over 40-step decode-log intervals: slower steps
# give each point several readings; the counter engines verify from any window.
STEP_MS = {"sglang": 10.0, "vllm": 2.0, "trtllm": 2.0, "atom": 2.0}
FAST_STEP_MS = 2.0  # keys without speculation: nothing to sample, only tokens to stream
Shape = tuple[str, int, str | None]
# The emulator's AL for a spec key with no AL to inject (it runs at real acceptance): any
# value inside (1, k+1] serves, the harness reads but cannot verify it.
UNVERIFIED_AL = 2.0  # engine, dp, router flavour


def shipped_keys(patterns: list[str] | None = None) -> list[str]:
    """The single-node keys of recipes/recipe/ (not multinode/), those matching any glob."""
    keys = sorted(p.stem for p in (repo_root() / "recipes" / "recipe").glob("*.yaml"))
    if not patterns:
        return keys
    return [k for k in keys if any(fnmatch.fnmatchcase(k, g) for g in patterns)]


def router_flavor(name: str | None) -> str | None:
    """The router emulator flavour for a router helper (vllm-router, sglang's router)."""
    if name is None:
        return None
    return "sglang" if "sglang" in name else "vllm"


class Fleet:
    """Emulators by shape, started on first use; `bias` is every engine's --al-bias."""

    def __init__(self, stack: contextlib.ExitStack, bias: float = 0.0) -> None:
        self.stack, self.bias = stack, bias
        self.up: dict[Shape, tuple[int, int | None]] = {}

    def urls(self, p: KeyPoint) -> tuple[str, str | None]:
        """The key's engine retuned to its AL and k; (url the client sends to, engine's own
        metrics URL when a router fronts it)."""
        shape = (p.engine, p.dp, router_flavor(p.router))
        if shape not in self.up:
            self.up[shape] = self._start(shape)
        eport, rport = self.up[shape]
        al, k = (p.al, p.k) if p.al is not None else (UNVERIFIED_AL if p.k else 1.0, max(p.k, 1))
        retune(eport, al, k, self.bias, STEP_MS[p.engine] if p.k else FAST_STEP_MS)
        engine = f"http://127.0.0.1:{eport}"
        return (f"http://127.0.0.1:{rport}", engine) if rport is not None else (engine, None)

    def _start(self, shape: Shape) -> tuple[int, int | None]:
        engine, dp, flavor = shape
        eport = self.stack.enter_context(spawn_server(
            "harness.testing.emulator_tunable", "--engine", engine, "--dp", str(dp),
            "--step-ms", str(STEP_MS[engine]), "--al-bias", str(self.bias),
            "--tokenizer", str(tokenizer_file())))
        if flavor is None:
            return eport, None
        rport = self.stack.enter_context(spawn_server(
            "harness.testing.router_emulator", "--worker-urls", f"http://127.0.0.1:{eport}",
            "--intra-node-data-parallel-size", str(dp), "--flavor", flavor))
        return eport, rport


def retune(port: int, al: float, k: int, bias: float, step_ms: float) -> None:
    body = orjson.dumps({"al": al, "k": k, "al_bias": bias, "step_ms": step_ms})
    req = urllib.request.Request(f"http://127.0.0.1:{port}/debug/acceptance", data=body,
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def _plan(key: str) -> KeyPoint:
    try:
        return plan_key(key)
    except Exception as e:  # a recipe that does not compose is that key's failure
        return unplanned(key, e)


@contextlib.contextmanager
def _quiet(log: Path) -> Iterator[None]:
    """A key's sweep output (progress bars, summaries) into its log, not the table's stream."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        yield


def _one(fleet: Fleet, p: KeyPoint, short: Short, out: Path) -> KeyResult:
    if p.sc is None:
        return KeyResult(p, why_not=p.unverified)
    t0 = time.perf_counter()
    try:
        url, metrics = fleet.urls(p)
    except Exception as e:  # an emulator that would not start or retune
        return KeyResult(p, seconds=time.perf_counter() - t0, why_not=f"emulator: {e}")
    with _quiet(out / "logs" / f"{p.key}.log"):
        return run_key(p, url, metrics, short, out / "runs")


def verify(keys: list[str], out: Path, short: Short | None = None, bias: float = 0.0,
           progress: io.TextIOBase | None = None) -> list[KeyResult]:
    """Plan every key, then run them grouped by emulator shape (one emulator each)."""
    short = short or Short(tokenizer=str(tokenizer_file().parent))
    points = [_plan(k) for k in keys]
    order = sorted(points, key=lambda p: (p.engine, p.dp, p.router or "", p.key))
    results: dict[str, KeyResult] = {}
    with contextlib.ExitStack() as stack:
        fleet = Fleet(stack, bias)
        for p in order:
            r = results[p.key] = _one(fleet, p, short, out)
            if progress is not None:
                print(f"{'ok  ' if r.ok else 'FAIL'} {p.key} {r.seconds:.1f}s {r.why_not[:120]}",
                      file=progress, flush=True)
    return [results[p.key] for p in points]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="harness catalog verify-e2e", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="", help="comma-separated globs (default: every key)")
    ap.add_argument("--out", type=Path, default=None,
                    help="run directories and logs (default: a temporary directory)")
    ap.add_argument("--al-bias", type=float, default=0.0,
                    help="every emulator realises AL + this (a broken injection must fail)")
    ap.add_argument("--agentic-s", type=float, default=AGENTIC_S,
                    help="measured replay seconds per agentic key")
    a = ap.parse_args(argv)
    patterns = [g for g in a.keys.split(",") if g]
    keys = shipped_keys(patterns)
    if not keys:
        print(f"harness catalog verify-e2e: no shipped key matches {a.keys!r} (keys are the "
              f"file names of recipes/recipe/*.yaml)", file=sys.stderr)
        return 2
    out = a.out or Path(tempfile.mkdtemp(prefix="verify-e2e-"))
    t0 = time.perf_counter()
    short = Short(agentic_s=a.agentic_s, tokenizer=str(tokenizer_file().parent))
    results = verify(keys, out, short, a.al_bias, progress=sys.stderr)  # type: ignore[arg-type]
    print(table(results))
    bad = [r for r in results if not r.ok]
    print(f"\n{len(results) - len(bad)} of {len(results)} keys verified in "
          f"{time.perf_counter() - t0:.0f} s (runs and logs: {out})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
