"""`harness eval` and `harness check lossless`: the correctness checks of a sweep, alone
(harness.sweep.correctness; docs/evals.md)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from harness.cli.parser import Parser
from harness.config.compose import compose_sweep
from harness.config.locations import repo_root


def _compose(overrides: list[str]):
    return compose_sweep([*overrides, "run_id=check"])


def _write(out: Path | None, obj: object) -> None:
    text = json.dumps(obj, indent=1, default=str)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
        print(f"wrote {out}")


def eval_command(argv: list[str]) -> int:
    from harness.sweep.correctness import standalone_evals

    p = Parser(
        prog="harness eval",
        description="Run accuracy evals (lm-eval, InferenceX's settings) against the recipe's "
                    "engine, launched, or attached with engine=endpoint engine.url=URL. "
                    "Overrides as for `harness sweep`, e.g. eval=gsm8k-slice eval.limit=20. "
                    "Exit 1 when a score is below its floor.")
    p.add_argument("overrides", nargs="*")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    a = p.parse_args(argv)
    sc = _compose(a.overrides if any(o.startswith("eval=") for o in a.overrides)
                  else ["eval=gsm8k", *a.overrides])
    with tempfile.TemporaryDirectory(prefix="harness-eval-") as work:
        results = standalone_evals(sc, repo_root(), Path(work), lambda k: f"the {k} setting")
    _write(a.out, [r.to_json() for r in results])
    for r in results:
        print(f"{r.task}: {r.score:.3f} ± {r.stderr or 0:.3f} (n {r.n}, floor {r.floor:g} "
              f"from {r.floor_source}): {'pass' if r.passed else 'FAIL'}")
    return 0 if all(r.passed for r in results) else 1


def check_command(argv: list[str]) -> int:
    from harness.sweep.correctness import standalone_lossless

    p = Parser(
        prog="harness check",
        description="lossless: the same prompts with and without the speculator on the same "
                    "engine build; token identity at temperature 0, a two-sample test per "
                    "position above it. Exit 1 when the speculator changed the output.")
    p.add_argument("check", choices=["lossless"])
    p.add_argument("overrides", nargs="*", help="e.g. speculator=ngram "
                   "'lossless.temperatures=[0,0.7]'")
    p.add_argument("--base-url", help="with engine=endpoint: the server without the "
                                      "speculator (engine.url is the one with it)")
    p.add_argument("--out", type=Path, help="write the result as JSON here")
    a = p.parse_args(argv)
    sc = _compose(a.overrides)
    with tempfile.TemporaryDirectory(prefix="harness-check-") as work:
        res = standalone_lossless(sc, repo_root(), Path(work),
                                  lambda k: f"the {k} setting", a.base_url)
    _write(a.out, res.to_json())
    print(res.verdict())
    for g in res.greedy:
        for d in g.divergences:
            print(f"  prompt {d.prompt}: first divergence at token {d.position}: "
                  f"{d.reference!r} without the speculator, {d.speculative!r} with it",
                  file=sys.stdout)
    return 0 if res.ok else 1
