"""Import names that cannot collide: the repository's top-level ``tasks/`` and
``ablations/`` are imported as ``harness.tasks`` and ``harness.ablations``, in a source checkout
(harness/__init__.py) and in an installed wheel (``package-dir`` in pyproject.toml). A user's own
``tasks`` or ``ablations`` package in the working directory (first on ``sys.path`` under
``python -m``), or a plugin's own ``tasks`` package, neither shadows ours nor is shadowed by it."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

OLD = ("tasks", "ablations")  # the import names before the package re-layout
# a package that breaks whoever imports it: found first, it would fail `ablate list`
RAISING = 'raise ImportError("the user\'s own {name} package was imported")\n'
# a plugin whose own top-level package is called `tasks`: it registers a task named from it
PLUGIN = """import tasks
from harness.plugin import TASKS

TASKS.register(tasks.NAME)(type("UserCopy", (TASKS.get("copy"),), {"__doc__": "the user's copy task"}))
"""


def _hostile_cwd(tmp_path: Path) -> Path:
    cwd = tmp_path / "project"
    for name in ("tasks", "ablations"):
        (cwd / name).mkdir(parents=True)
        (cwd / name / "__init__.py").write_text(RAISING.format(name=name))
    return cwd


def _plugin_dir(tmp_path: Path) -> Path:
    plug = tmp_path / "plug"
    (plug / "tasks").mkdir(parents=True)
    (plug / "tasks" / "__init__.py").write_text('NAME = "user_copy"\n')
    (plug / "my_plugin.py").write_text(PLUGIN)
    return plug


def _ablate(args: list[str], cwd: Path, pythonpath: list[Path]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath)), "ABLATE_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_pyproject_installs_every_package_under_harness() -> None:
    """Every package of the source installs, ``tasks/`` and ``ablations/`` under ``harness``."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {"harness.tasks", "harness.ablations"} | {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "harness").rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == found
    assert setuptools["package-dir"] == {"harness.tasks": "tasks", "harness.ablations": "ablations"}
    assert set(setuptools["package-data"]) == {"harness.ablations", "harness.experiment"}


def test_nothing_imports_the_old_top_level_names() -> None:
    """``import tasks`` or ``from ablations import ...`` would fail on an install, or, in a venv with
    an older editable install, silently import that checkout's copy: every Python file of the
    repository imports them as ``harness.tasks`` and ``harness.ablations``."""
    bad = []
    for top in ("harness", "tasks", "ablations", "tests", "examples", "benchmarks", "scripts"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in OLD]
    assert bad == []


def test_a_users_tasks_package_in_the_working_directory_shadows_nothing(tmp_path: Path) -> None:
    """Source checkout: the working directory comes first on ``sys.path`` under ``python -m``."""
    done = _ablate(["list"], _hostile_cwd(tmp_path), [ROOT])
    assert done.returncode == 0, done.stderr
    assert "task copy (v1, synthetic)" in done.stdout and "\naa_check " in "\n" + done.stdout


@pytest.mark.install
def test_installed_wheel_neither_shadows_nor_is_shadowed(tmp_path: Path) -> None:
    """``pip install .`` (not editable) into a folder: nothing of ours lands at the top level of
    site-packages; ``ablate list`` works from a folder holding a user's own ``tasks`` and
    ``ablations``; and a plugin's own ``tasks`` package stays its own, even behind ours on the path."""
    src = tmp_path / "src"
    for name in ("harness", "tasks", "ablations"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target)]
    done = subprocess.run([*pip, str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in target.iterdir() if not p.name.endswith(".dist-info")) == ["bin", "harness"]
    assert (target / "harness" / "tasks" / "padded.py").is_file()
    assert (target / "harness" / "ablations" / "pe_extrapolation.yaml").is_file()
    shipped = target / "harness" / "experiment" / "ablation.schema.json"  # package-data: for editors
    assert shipped.read_text() == (ROOT / "harness" / "experiment" / "ablation.schema.json").read_text()

    listed = _ablate(["list"], _hostile_cwd(tmp_path), [target])
    assert listed.returncode == 0, listed.stderr
    assert "task copy (v1, synthetic)" in listed.stdout and "\npe_extrapolation " in "\n" + listed.stdout

    neutral = tmp_path / "elsewhere"
    neutral.mkdir()
    plugged = _ablate(["list", "--plugin", "my_plugin"], neutral, [target, _plugin_dir(tmp_path)])
    assert plugged.returncode == 0, plugged.stderr
    assert "task user_copy" in plugged.stdout and "task copy (v1, synthetic)" in plugged.stdout
