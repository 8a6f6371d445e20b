"""The import rules of docs/ARCHITECTURE.md, checked over the source of every module with ``ast``
(nothing is imported): which layer may import which, no import cycle, Lightning only in
``harness.training``, the CLI imported by nothing but itself, and no import inside a function
except the lazy heavy ones (torch, Lightning, W&B, Optuna, Ray, submitit, matplotlib, pandas, scipy,
statsmodels) and the few listed in ``LAZY_INTERNAL`` with their reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# layer -> the layers (besides itself) it may import; a module's layer is its first package below
# harness (harness/errors.py and its siblings: "base"); harness.tasks and harness.ablations (the
# repository's top-level tasks/ and ablations/, imported under harness: harness/__init__.py) too
ALLOWED = {
    "base": set(),
    "modules": {"base"},
    "tasks": {"base"},
    "ablations": set(),
    "contracts": {"base", "modules", "tasks"},
    "training": {"base", "modules", "tasks"},
    "experiment": {"base", "modules", "tasks", "training"},
    "store": {"base"},
    "execution": {"base", "modules", "tasks", "experiment", "store", "training"},
    "analysis": {"base", "experiment", "store"},
    "tune": {"base", "modules", "tasks", "experiment", "store", "training", "execution"},
    "report": {"base", "experiment", "store", "analysis", "tune"},
    "bench": {"base", "modules"},
    # harness/plugin.py, the public API for plugins: a layer of its own that nothing imports
    "plugin": {"base", "modules", "tasks", "experiment"},
    "cli": {
        "base",
        "modules",
        "tasks",
        "experiment",
        "store",
        "training",
        "execution",
        "analysis",
        "tune",
        "report",
        "bench",
        "contracts",
    },
}
# third-party packages that may be imported inside a function: slow to import, needed by few paths
HEAVY = {
    "torch",
    "lightning",
    "pytorch_lightning",
    "wandb",
    "optuna",
    "optuna_integration",
    "ray",
    "submitit",
    "matplotlib",
    "scipy",
    "statsmodels",
    "pandas",
    "psycopg2",
    "sqlalchemy",
    "tokenizers",  # the text task's BPE vocabulary only
    "datasets",  # the text task's Hugging Face source only (optional extra, ~6 s to import)
}
# internal modules imported inside a function, and why
LAZY_INTERNAL = {
    # the modules below import torch or Lightning at module level
    "harness.modules",
    "harness.training.loop",
    "harness.training.precision",
    "harness.training.probes",
    "harness.tune.objective",
    "harness.bench.attention",
    "harness.tasks",
    # the console script imports typer and the app only when the command line starts
    "harness.cli.app",
}
# modules whose every import of the harness may be lazy: the typer app and the modules it imports, each
# command declared beside what runs it, import what a command needs only when it runs, so that
# `ablate --help` answers at once
LAZY_MODULES = {
    "harness.cli.app",
    "harness.cli.options",
    "harness.cli.output",
    "harness.cli.inspect",
    "harness.cli.run",
    "harness.cli.compare",
    "harness.cli.report",
    "harness.cli.restore",
    "harness.cli.tools",
}
LIGHTNING = ("lightning", "pytorch_lightning", "optuna_integration")


# the import name of each top-level source folder: tasks/ and ablations/ are imported under harness
PACKAGES = {"harness": "harness", "tasks": "harness.tasks", "ablations": "harness.ablations"}


def _modules() -> dict[str, Path]:
    out = {}
    for top, package in PACKAGES.items():
        for path in sorted((ROOT / top).rglob("*.py")):
            name = ".".join((package, *path.relative_to(ROOT / top).with_suffix("").parts))
            out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def layer(module: str) -> str:
    parts = module.split(".")
    if module == "harness.plugin":
        return "plugin"
    if parts[0] != "harness":
        return parts[0]
    if len(parts) > 2 or (len(parts) == 2 and MODULES[module].name == "__init__.py"):
        return parts[1]
    return "base"


def _imports(tree: ast.AST):
    """(imported module, node, inside a function) for every import, those under ``if TYPE_CHECKING``
    included: a type that must be imported from a higher layer is a dependency on it all the same."""

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child, in_function
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                submodules = [f"{child.module}.{a.name}" for a in child.names if f"{child.module}.{a.name}" in MODULES]
                if len(submodules) < len(child.names):  # names defined in the module itself
                    yield child.module, child, in_function
                for name in submodules:  # from harness.report import figures
                    yield name, child, in_function
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    yield from walk(tree, False)


def _internal(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


GRAPH = {m: [(i, n, f) for i, n, f in _imports(ast.parse(p.read_text(), str(p)))] for m, p in MODULES.items()}


def test_every_module_belongs_to_a_layer() -> None:
    assert {layer(m) for m in MODULES} <= set(ALLOWED)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_its_own_and_lower_layers(module: str) -> None:
    if module.endswith("__main__"):
        return  # `python -m harness.bench`: an entry point, like the console script
    bad = []
    for name, node, _ in GRAPH[module]:
        target = _internal(name)
        if target is None or layer(target) in ALLOWED[layer(module)] | {layer(module)}:
            continue
        bad.append(f"line {node.lineno}: {target} ({layer(target)})")
    assert not bad, f"{module} ({layer(module)}) may import only {sorted(ALLOWED[layer(module)])}: {bad}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_inside_a_function_but_lazy_heavy_ones(module: str) -> None:
    bad = []
    for name, node, in_function in GRAPH[module]:
        if not in_function:
            continue
        target = _internal(name)
        if target is None and name.split(".")[0] in HEAVY:
            continue
        if target is not None and (target in LAZY_INTERNAL or module in LAZY_MODULES):
            continue
        if target is None and name.split(".")[0] not in HEAVY:
            bad.append(f"line {node.lineno}: {name}")
        elif target is not None:
            bad.append(f"line {node.lineno}: {target}")
    assert not bad, f"{module}: imports inside a function that are neither heavy nor listed: {bad}"


def test_lightning_only_in_training() -> None:
    users = sorted(m for m, imps in GRAPH.items() for name, _, _ in imps if name.split(".")[0] in LIGHTNING)
    assert users and all(m.startswith("harness.training.") for m in users), users


def test_nothing_but_the_cli_imports_the_cli() -> None:
    users = sorted(
        m
        for m, imps in GRAPH.items()
        for name, _, _ in imps
        if (_internal(name) or "").startswith("harness.cli") and layer(m) != "cli" and not m.endswith("__main__")
    )
    assert users == []


STATISTICS = ("stats", "paired", "verdicts", "sequential")


def test_statistics_know_nothing_of_the_harness() -> None:
    """The statistics (``stats``, ``paired``, ``sequential``) import nothing of the harness
    but each other and the verdict vocabulary, which imports nothing."""
    allowed = {f"harness.analysis.{m}" for m in STATISTICS}
    for module in STATISTICS:
        assert {_internal(n) for n, _, _ in GRAPH[f"harness.analysis.{module}"] if _internal(n)} <= allowed, module
    assert [n for n, _, _ in GRAPH["harness.analysis.verdicts"] if _internal(n)] == []


def test_package_inits_import_nothing() -> None:
    """``ablate --help`` imports the ``harness.cli`` package: every ``__init__`` below ``harness``
    stays free of imports at module level (``harness.modules`` and ``harness.tasks`` excepted: they
    are their registries; ``harness`` itself imports ``os`` only, to find ``harness.tasks`` in a
    source checkout)."""
    for module in MODULES:
        if MODULES[module].name == "__init__.py" and module not in ("harness", "harness.modules", "harness.tasks"):
            assert [n for n, _, f in GRAPH[module] if not f] == [], module
    assert [n for n, _, f in GRAPH["harness"] if not f] == ["os"]


def test_no_import_cycle() -> None:
    graph = {
        m: {
            t
            for n, _, _ in GRAPH[m]
            if (t := _internal(n)) and t != m and not (t.startswith(m + ".") or m.startswith(t + "."))
        }
        for m in MODULES
    }
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(path[path.index(t) :] + [t] if t in path else [m, t])
            elif t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_tests_mirror_the_packages_and_never_import_each_other() -> None:
    """tests/<layer>/ for each layer (plus e2e/, helpers/, fixtures/); a test module imports
    helpers from tests/helpers/ or fixtures from conftest.py, never from another test module."""
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    assert folders <= set(ALLOWED) | {"e2e", "helpers", "fixtures"}, folders
    bad = []
    for path in tests.rglob("*.py"):
        for name, node, _ in _imports(ast.parse(path.read_text(), str(path))):
            if name.split(".")[-1].startswith("test_") or name.startswith("tests."):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert bad == []
