"""The contributors' pages agree with the code: docs/ARCHITECTURE.md's layer table is the packages
and the import rules of tests/test_layers.py, every module either page names exists, and every
signature docs/INTERFACES.md lists has the parameters ``inspect.signature`` finds in the code."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
INTERFACES = (ROOT / "docs" / "INTERFACES.md").read_text()
MAX_LINES = 400  # the ceiling ARCHITECTURE.md states


def _allowed() -> dict[str, set[str]]:
    """tests/test_layers.py's ``ALLOWED``, read from its source (test modules never import each other)."""
    tree = ast.parse((ROOT / "tests" / "test_layers.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "ALLOWED")
    return {k: set(v) for k, v in ast.literal_eval(node.value).items()}


def _layer_rows() -> dict[str, tuple[str, str]]:
    """Each row of the layer table: layer -> (what it holds, what it imports), lines joined."""
    block = re.search(r"## The layers, bottom to top\n\n```\n(.*?)```", ARCHITECTURE, re.DOTALL).group(1)
    rows: dict[str, list[list[str]]] = {}
    for line in block.splitlines():
        if line[:1].strip():
            name = line.split()[0].rstrip("/")
            rows[name] = [[], []]
        held, _, imports = re.match(r"(.*?)(\s{2,}(\S.*))?$", line[14:]).groups()
        rows[name][0].append(held.strip())
        rows[name][1].append((imports or "").strip())
    return {k: (" ".join(held), " ".join(imports)) for k, (held, imports) in rows.items()}


def _package(layer: str) -> Path:
    return ROOT / layer if layer in ("tasks", "ablations") else ROOT / "harness" / layer


def test_the_layer_table_is_the_packages_and_their_import_rules() -> None:
    allowed, rows = _allowed(), _layer_rows()
    assert set(rows) == set(allowed), set(rows) ^ set(allowed)
    packages = {p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").exists() or p.name == "ablations"}
    assert packages | {"tasks", "ablations"} == set(rows) - {"base", "plugin"} | {"ablations"}, packages
    for layer, (_, imports) in rows.items():
        if layer == "cli":
            assert imports.startswith("everything below"), imports
            continue
        named = set(re.findall(r"\b(" + "|".join(allowed) + r")\b", imports)) if imports != "nothing" else set()
        assert named - {"base"} == allowed[layer] - {"base"}, (layer, sorted(named), sorted(allowed[layer]))


def test_the_modules_a_layer_row_names_exist() -> None:
    for layer, (held, _) in _layer_rows().items():
        if layer in ("base", "plugin"):
            continue
        for name in re.findall(r"(?<![\w/])([\w/]+\.py)\b", held):
            found = [*_package(layer).rglob(name), *(ROOT / "harness").glob(name)]
            assert found, f"ARCHITECTURE.md's {layer} row names {name}, which is not in {_package(layer)}"


@pytest.mark.parametrize("page", ["docs/ARCHITECTURE.md", "docs/INTERFACES.md"])
def test_every_path_a_page_names_exists(page: str) -> None:
    text = (ROOT / page).read_text()
    paths = set(re.findall(r"\b((?:harness|tasks|tests|examples|benchmarks)/[\w/.-]*\w)", text))
    assert len(paths) > 10, paths
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{page} names paths that do not exist: {missing}"


def test_no_module_passes_the_ceiling() -> None:
    files = [*(ROOT / "harness").rglob("*.py"), *(ROOT / "tasks").glob("*.py")]
    over = {str(f.relative_to(ROOT)): n for f in files if (n := len(f.read_text().splitlines())) > MAX_LINES}
    assert not over, f"over {MAX_LINES} lines (ARCHITECTURE.md: split it): {over}"


# --- INTERFACES.md's signatures -----------------------------------------------------------------


def _index() -> dict[str, dict[str, set[str]]]:
    """Every module of the harness (tasks/ as harness.tasks) -> its top-level functions and classes,
    each class with its methods; from the source, nothing imported."""
    out = {}
    for path in [*(ROOT / "harness").rglob("*.py"), *(ROOT / "tasks").glob("*.py")]:
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts if rel.parts[0] == "harness" else ("harness", *rel.parts)
        module = ".".join(p for p in parts if p != "__init__")
        defs: dict[str, set[str]] = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                defs[node.name] = set()
            elif isinstance(node, ast.ClassDef):
                defs[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        out[module] = defs
    return out


INDEX = _index()


def _resolve(name: str) -> tuple[str, list[str]] | None:
    """The one module and attribute path ``name`` denotes (``execute``, ``stats.compare``,
    ``build.write_report``, ``Analysis.table``), or None when it denotes none or several."""
    parts = name.split(".")
    hits = set()
    for module, defs in INDEX.items():
        mparts = module.split(".")
        for k in range(len(parts)):
            if k and mparts[-k:] != parts[:k]:
                continue
            if k == 0 and len(parts) > 2:
                continue
            head, *rest = parts[k:]
            if head in defs and (not rest or (len(rest) == 1 and rest[0] in defs[head])):
                hits.add((module, tuple(parts[k:])))
        if len(parts) <= 2 and parts[0] in defs:
            rest = parts[1:]
            if not rest or rest[0] in defs[parts[0]]:
                hits.add((module, tuple(parts)))
    return (next(iter(hits))[0], list(next(iter(hits))[1])) if len(hits) == 1 else None


def _split(args: str) -> list[str]:
    depth, current, out = 0, "", []
    for ch in args:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    return [a.strip() for a in [*out, current] if a.strip()]


def _listed() -> list[tuple[str, list[str]]]:
    """Every ``name(params)`` that opens a line of a python block: the name and its parameter names
    (``...`` where the page elides some), continued lines joined."""
    out = []
    for block in re.findall(r"```python\n(.*?)```", INTERFACES, re.DOTALL):
        lines = [line.split("  #")[0] for line in block.splitlines()]
        i = 0
        while i < len(lines):
            match = re.match(r"([A-Za-z_][\w.]*)\(", lines[i])  # a method of a class shown is indented
            if not match or re.search(r"""\(["'\d]""", lines[i]):  # an example call, not a signature
                i += 1
                continue
            text, depth, args = lines[i][match.end() :], 1, ""
            while True:
                for ch in text:
                    depth += (ch == "(") - (ch == ")")
                    if depth == 0:
                        break
                    args += ch
                if depth == 0 or i + 1 >= len(lines):
                    break
                i += 1
                text = " " + lines[i]
            names = [
                "..." if a == "..." else re.match(r"\*{0,2}(\w+)", a).group(1)
                for a in _split(args)
                if a not in ("*", "/") and re.match(r"\*{0,2}\w+|\.\.\.$", a)
            ]
            out.append((match.group(1), names))
            i += 1
    return out


def test_every_signature_interfaces_lists_is_the_codes() -> None:
    checked, wrong = [], []
    for name, listed in _listed():
        found = _resolve(name)
        if found is None:
            continue
        module, attrs = found
        obj = importlib.import_module(module)
        for attr in attrs:
            obj = getattr(obj, attr)
        params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
        checked.append(name)
        if "..." in listed:
            known = [p for p in listed if p != "..."]
            if [p for p in params if p in known] != known:
                wrong.append(f"{name}({', '.join(listed)}): the code's {module}: ({', '.join(params)})")
        elif listed != params:
            wrong.append(f"{name}({', '.join(listed)}): the code's {module}: ({', '.join(params)})")
    assert not wrong, "INTERFACES.md lists signatures the code does not have:\n" + "\n".join(wrong)
    assert {"execute", "run_grid", "build.write_report", "markdown.write_markdown"} <= set(checked), checked
    assert len(checked) >= 30, checked
