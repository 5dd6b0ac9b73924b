"""The environment and the launch step a single-node job gets from upstream's workflows, read from
the checkout: `.github/workflows/run-sweep.yml` maps a matrix job to the inputs of
`.github/workflows/benchmark-tmpl.yml`, whose `env:` block and "Launch job script" step
(`bash ./runners/launch_${RUNNER_NAME%%_*}.sh`) start the job (both @843c6254). The `${{ }}`
expressions are evaluated here by a small evaluator of the GitHub Actions expression subset those
files use (literals, contexts, == != && || !, toJson/contains/format/fromJSON)."""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

TEMPLATE = ".github/workflows/benchmark-tmpl.yml"
SWEEP = ".github/workflows/run-sweep.yml"
FIXED_JOB = "sweep-single-node-8k1k"
AGENTIC_JOB = "sweep-agentic"
EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)
TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)"
                   r"|(?P<op>==|!=|&&|\|\||[!()\[\],.*])|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))")


class ExprError(ValueError):
    pass


def _tokens(src: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    src = src.strip()
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise ExprError(f"cannot read expression {src!r} at {pos}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(src) and src[pos].isspace():
            pos += 1
    return out


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)


class _Parser:
    def __init__(self, src: str, ctx: Mapping[str, Any]) -> None:
        self.t, self.i, self.ctx = _tokens(src), 0, ctx

    def peek(self) -> str | None:
        return self.t[self.i][1] if self.i < len(self.t) else None

    def take(self) -> tuple[str, str]:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def parse(self) -> Any:
        v = self.or_()
        if self.i != len(self.t):
            raise ExprError(f"trailing tokens in expression: {self.t[self.i:]}")
        return v

    def or_(self) -> Any:
        v = self.and_()
        while self.peek() == "||":
            self.take()
            rhs = self.and_()
            v = v if v else rhs
        return v

    def and_(self) -> Any:
        v = self.cmp()
        while self.peek() == "&&":
            self.take()
            rhs = self.cmp()
            v = rhs if v else v
        return v

    def cmp(self) -> Any:
        v = self.unary()
        while self.peek() in ("==", "!="):
            op = self.take()[1]
            rhs = self.unary()
            eq = _text(v).lower() == _text(rhs).lower()
            v = eq if op == "==" else not eq
        return v

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not self.unary()
        return self.primary()

    def primary(self) -> Any:
        kind, val = self.take()
        if val == "(":
            v = self.or_()
            self.take()
            return v
        if kind == "str":
            return val[1:-1].replace("''", "'")
        if kind == "num":
            return float(val) if "." in val else int(val)
        if val in ("true", "false"):
            return val == "true"
        if val == "null":
            return None
        if self.peek() == "(":
            return self.call(val)
        v: Any = self.ctx.get(val)
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = self.or_()
                self.take()
            v = _member(v, key)
        return v

    def call(self, fn: str) -> Any:
        self.take()
        args = []
        while self.peek() != ")":
            args.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take()
        if fn == "toJson" or fn == "toJSON":
            return json.dumps(args[0])
        if fn in ("fromJson", "fromJSON"):
            return json.loads(args[0]) if args[0] else None
        if fn == "contains":
            hay = args[0]
            return args[1] in hay if isinstance(hay, (list, str)) else False
        if fn == "format":
            return re.sub(r"\{(\d+)\}", lambda m: _text(args[int(m.group(1)) + 1]), args[0])
        raise ExprError(f"unknown function {fn}")


def _member(v: Any, key: Any) -> Any:
    """`v.key`; `v.*` is every value (an object filter), `list.key` the key of each item."""
    if key == "*":
        return list(v.values()) if isinstance(v, Mapping) else v if isinstance(v, list) else None
    if isinstance(v, list):
        return [x.get(key) for x in v if isinstance(x, Mapping)]
    return v.get(key) if isinstance(v, Mapping) else None


def evaluate(src: str, ctx: Mapping[str, Any]) -> Any:
    return _Parser(src, ctx).parse()


def substitute(text: str, ctx: Mapping[str, Any]) -> str:
    """`text` with every `${{ expr }}` replaced by its value as GitHub renders it."""
    return EXPR.sub(lambda m: _text(evaluate(m.group(1), ctx)), text)


@functools.lru_cache(maxsize=8)
def _load_cached(path: Path, mtime_ns: int) -> dict:
    doc = yaml.safe_load(path.read_text())
    if True in doc and "on" not in doc:  # YAML 1.1 reads the key `on` as true
        doc["on"] = doc.pop(True)
    return doc


def _load(checkout: Path, rel: str) -> dict:
    path = checkout / rel
    return copy.deepcopy(_load_cached(path, path.stat().st_mtime_ns))


def job_inputs(checkout: Path, job: Mapping[str, Any], agentic: bool) -> dict[str, Any]:
    """The template's inputs for one matrix job: run-sweep.yml's `with:` for the single-node or
    agentic sweep job, evaluated with `matrix.config` = the job, over the template's defaults."""
    sweep = _load(checkout, SWEEP)["jobs"][AGENTIC_JOB if agentic else FIXED_JOB]
    tmpl_inputs = _load(checkout, TEMPLATE)["on"]["workflow_call"]["inputs"]
    ctx = {"matrix": {"config": dict(job)}, "github": {"event": {}}, "needs": {}}
    out: dict[str, Any] = {k: v.get("default") for k, v in tmpl_inputs.items()}
    for name, expr in sweep["with"].items():
        if isinstance(expr, str) and EXPR.fullmatch(expr.strip()):
            out[name] = evaluate(EXPR.fullmatch(expr.strip()).group(1), ctx)
        elif isinstance(expr, str):
            out[name] = substitute(expr, ctx)
        else:
            out[name] = expr
    for name, spec in tmpl_inputs.items():
        if spec.get("type") == "boolean" and isinstance(out.get(name), str):
            out[name] = out[name] == "true"
    return out


def launch_step(checkout: Path, inputs: Mapping[str, Any], runner_name: str,
                workspace: str = "/workspace") -> tuple[dict[str, str], str]:
    """(environment, bash text) of the template's "Launch job script" step for this job: the
    template's `env:` then the step's own, secrets empty, `runner.name` the runner node."""
    tmpl = _load(checkout, TEMPLATE)
    ctx: dict[str, Any] = {"inputs": dict(inputs), "secrets": {}, "vars": {},
                           "runner": {"name": runner_name}, "github": {"run_attempt": "1"}}
    env: dict[str, str] = {}
    for k, v in tmpl["env"].items():
        env[k] = substitute(_text(v), {**ctx, "env": env})
    ctx["env"] = env
    step = next(s for s in tmpl["jobs"]["benchmark"]["steps"]
                if s.get("name") == "Launch job script")
    for k, v in step.get("env", {}).items():
        env[k] = substitute(_text(v), ctx)
    env.update({"GITHUB_WORKSPACE": workspace, "GITHUB_ACTIONS": "true", "HOME": "/root",
                "USER": "runner", "GITHUB_ENV": "/tmp/github_env",
                "GITHUB_OUTPUT": "/tmp/github_output"})
    return env, substitute(step["run"], ctx)
