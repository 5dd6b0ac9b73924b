"""Server commands as the upstream scripts run them (`engine.argv_template`): InferenceX's
catalog recipes transcribe each script's flags as data, with placeholders for what a launch
decides (docs/upstream/inferencex.md §2). Substitution is per argument, never a shell."""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping

from harness.config.errors import ConfigError
from harness.config.schema import SweepConfig

# What a template may name. max_model_len is InferenceX's (isl + osl + 200, its matrix
# generator), not the adapters' own margin. model_dir is the checkpoint's directory as the
# engine sees it (harness/engines/weights.py model_dir), for a file inside the checkpoint.
PLACEHOLDERS = ("model", "model_dir", "served_name", "port", "host", "tp", "ep", "pp", "dp",
                "conc", "isl", "osl", "max_model_len", "python", "extra_options")


def template_values(sc: SweepConfig, checkpoint: str, served_name: str, python: str,
                    port: int, concurrency: int, extra_options: str = "") -> dict[str, str]:
    from harness.engines.weights import model_dir, names_model_dir

    t, s = sc.topology, sc.scenario
    where = model_dir(sc, checkpoint) if names_model_dir(sc) else ""
    values = {"model": checkpoint, "model_dir": where, "served_name": served_name, "port": port,
              "host": sc.engine.host, "tp": t.tp, "ep": t.ep, "pp": t.pp,
              "dp": t.tp if t.dp_attention else 1, "conc": concurrency, "isl": s.isl,
              "osl": s.osl, "max_model_len": max_model_len(s.isl, s.osl), "python": python,
              "extra_options": extra_options}
    return {k: str(v) for k, v in values.items()}


def max_model_len(isl: int, osl: int) -> int:
    """{max_model_len}: InferenceX's matrix generator's rule (isl + osl + margin)."""
    return isl + osl + 200


def render(template: list[str], values: Mapping[str, str]) -> list[str]:
    """Each argument with its {placeholders} filled; one argument stays one argument.
    {port} is the job's port and {port+N} that plus N (a router in front on {port}, the
    engine behind it on {port+1}: harness/engines/helpers.py)."""
    from harness.engines.helpers import render_arg

    base = int(values["port"]) if str(values.get("port", "")).isdigit() else 0
    return [render_arg(a, base, values) for a in template]


def check_template(sc: SweepConfig, where: Callable[[str], str]) -> None:
    """Unknown placeholders or broken braces, as a ConfigError before anything starts."""
    key = "engine.argv_template"
    tpl = sc.engine.argv_template
    for arg in [*tpl, *sc.engine.extra_args] if tpl else []:
        try:
            names = [f for _, f, _, _ in string.Formatter().parse(arg) if f is not None]
        except ValueError as e:
            raise ConfigError.at(where, key, f"argument {arg!r}: {e}",
                                 "write a literal brace as {{ or }}") from None
        bad = [n for n in names if n not in PLACEHOLDERS and not _port_plus(n)]
        if bad:
            raise ConfigError.at(where, key, f"argument {arg!r} names {bad}",
                                 f"use only {', '.join(PLACEHOLDERS)} or port+N (literal "
                                 "braces: {{{{ }}}})")


def _port_plus(name: str) -> bool:
    head, _, n = name.partition("+")
    return head == "port" and n.isdigit()


def has_flag(argv: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in argv)


def flag_value(argv: list[str], flag: str) -> str | None:
    """The value of the last `flag V` or `flag=V` in argv (the one argparse keeps), or None."""
    value = None
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(flag + "="):
            value = a[len(flag) + 1:]
    return value
