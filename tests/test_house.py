"""The house rules that keep modules one job each: no import cycles, imports that point down
the layers of docs/architecture.md, no long functions."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
MAX_FUNCTION_LINES = 60
# The client's hot path reads one socket buffer per iteration; splitting it costs per-chunk
# calls the ingest benchmark measures.
HOT_PATH = {("streaming.py", "_send_once"), ("sse.py", "feed"), ("sse.py", "_feed_head")}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module of the package this module imports: at import time, under TYPE_CHECKING
    or inside a function (a lazy import hides a cycle from the interpreter, not from us)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("harness"):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("harness"))
    return out


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for imp in _imports(path):
            while imp and imp not in modules:  # `from harness.x import y` where y is a name
                imp = imp.rpartition(".")[0]
            if imp and imp != name:
                deps.add(imp)
        graph[name] = deps
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return [*stack[stack.index(d):], d]
            if d not in state and (c := visit(d)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_itself_through_others() -> None:
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_function_is_longer_than_sixty_lines() -> None:
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES and (path.name, node.name) not in HOT_PATH:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} "
                                f"{node.name} ({n} lines)")
    assert not long, "functions over 60 lines:\n" + "\n".join(long)


def test_docs_metrics_is_generated_from_the_catalogue() -> None:
    from harness.record.metrics import catalogue_markdown

    doc = PACKAGE.parent / "docs" / "metrics.md"
    assert doc.read_text() == catalogue_markdown(), (
        "docs/metrics.md is stale: python -c "
        "'from harness.record.metrics import catalogue_markdown; "
        "open(\"docs/metrics.md\", \"w\").write(catalogue_markdown())'")


def test_code_cites_only_docs_that_live_in_this_repository() -> None:
    import re

    root = PACKAGE.parent
    for path in PACKAGE.rglob("*.py"):
        # ours, not an upstream citation such as `ai-dynamo/aiperf:docs/x.md`
        for m in re.finditer(r"(?<![:\w/.-])docs/[\w/.-]+\.md", path.read_text()):
            assert (root / m.group()).is_file(), f"{path}: cites {m.group()}, not in the repo"
        assert "shared/" not in path.read_text() or path.name == "test_house.py", path


# docs/architecture.md: the packages by job, lowest first. A module may import its own package
# and any package of a lower layer, never one above it. Packages of one layer do not import
# each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("harness", "harness.records", "harness.config"),
    ("harness.client",),
    ("harness.speculation",),
    ("harness.record",),
    ("harness.telemetry", "harness.engines"),
    ("harness.workloads",),
    # Beside publishing: the InferenceX catalog importer (reads upstream, renders launches) and
    # the correctness checks (evals, lossless speculation), both run by a sweep.
    ("harness.publish", "harness.catalog", "harness.evals"),
    ("harness.sweep",),
    ("harness.cli",),
    ("harness.testing",),
)
# Modules at the package's root, outside any package: the version, and the request records
# that every layer passes along (workloads build RequestSpecs, the client fills RequestRecords,
# metrics and results read them).
ROOT_MODULES = {"harness", "harness.records"}


def _package_of(module: str) -> str:
    parts = module.split(".")
    return module if module in ROOT_MODULES else ".".join(parts[:2])


def _layer_of(package: str) -> int:
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return i
    raise AssertionError(f"{package} is in no layer of tests/test_house.py LAYERS "
                         "(add it, and to docs/architecture.md)")


def _wrong_way(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for mod, deps in graph.items():
        here = _package_of(mod)
        for d in deps:
            there = _package_of(d)
            if here == there:
                continue
            if _layer_of(there) > _layer_of(here) or (
                    _layer_of(there) == _layer_of(here) and there not in ROOT_MODULES
                    and here not in ROOT_MODULES and _layer_of(here) != 0):
                out.append(f"{mod} -> {d}")
    return sorted(out)


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {"harness.client.sse": {"harness.record.metrics"},
             "harness.record.metrics": {"harness.records"},
             "harness.engines.base": {"harness.telemetry.base"}}
    assert _wrong_way(graph) == ["harness.client.sse -> harness.record.metrics",
                                 "harness.engines.base -> harness.telemetry.base"]


def test_imports_point_down_the_layers() -> None:
    wrong = _wrong_way(_graph())
    assert not wrong, ("imports that point up the layers (docs/architecture.md):\n"
                       + "\n".join(wrong))


def test_the_package_root_holds_only_what_belongs_to_all() -> None:
    root = sorted(f"harness.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert set(root) <= ROOT_MODULES, (
        f"modules at harness/'s root outside a package: {sorted(set(root) - ROOT_MODULES)}; "
        "put each in the package of its job (docs/architecture.md)")
    for pkg in (p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"):
        _layer_of(f"harness.{pkg.name}")


# A workload kind answers for itself (docs/architecture.md, "Engine and workload kinds are
# plug-ins"): code outside harness/workloads/ asks the kind's class or the point's recorded
# traits (harness.record.workload_traits), never compares the scenario's kind with a name.
# What may still compare, and why:
KIND_BRANCHES_ALLOWED = {
    # below the workloads' layer: the built-in kind's flag where a caller passes none
    "harness/speculation/acceptance.py": 1,
}
# Branches another change has yet to take out (the bench rules take the point's traits from
# the sweep's assembly, harness/sweep/point.py); the count fails when they are gone, so the
# entry goes with them.
KIND_BRANCHES_NOT_YET: dict[str, int] = {}
_KIND_NAMES = {"fixed", "agentic", "timestamped"}


def _kind_names(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in _KIND_NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_kind_names(e) for e in node.elts)
    return False


def kind_branches(source: str) -> int:
    """Comparisons of something named `kind` with a workload kind's name."""
    n = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_kind_names(s) for s in sides) and any(
                    "kind" in ast.unparse(s) for s in sides if not _kind_names(s)):
                n += 1
    return n


def test_the_kind_branch_count_finds_a_branch() -> None:
    assert kind_branches('if sc.scenario.kind == "agentic":\n    pass\n') == 1
    assert kind_branches('x = p.get("scenario_kind", "fixed") in ("fixed", "x")\n') == 1
    assert kind_branches('if engine == "agentic":\n    pass\n') == 0


def test_no_branch_on_the_scenario_kind_outside_workloads() -> None:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE.parent))
        if not rel.startswith("harness/workloads/") and (n := kind_branches(path.read_text())):
            found[rel] = n
    allowed = {**KIND_BRANCHES_ALLOWED, **KIND_BRANCHES_NOT_YET}
    assert found == allowed, (
        f"branches on the scenario's kind outside harness/workloads/: {found}, expected "
        f"{allowed}; declare the trait on the workload class and read it from the point "
        "(harness/record/workload_traits.py) or the class (workload_class(kind))")
    assert sum(KIND_BRANCHES_ALLOWED.values()) <= 2
    js = [f"{p.relative_to(PACKAGE.parent)}" for p in PACKAGE.rglob("*.js")
          if "scenario_kind ===" in p.read_text() or "scenario_kind !==" in p.read_text()]
    assert not js, f"pages branching on the scenario's kind: {js}; read the point's traits"
