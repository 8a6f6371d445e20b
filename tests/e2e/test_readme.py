"""README's first commands work in order on a fresh install, and `.ci/run` runs README's test command.

The full check (a fresh venv, README's install command, the main job, the test command) is done by
hand before a release; this test pins the facts it rests on, so that an edit cannot break them
silently: the test command needs pytest, which README's install command must install.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def _first_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block, "README has no ```bash block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.split("#", 1)[0].strip()]


def test_readme_block_is_install_main_job_test() -> None:
    install, main, test = _first_block()
    assert install.startswith("pip install -e ")
    assert main == "ablate run pe_extrapolation"
    assert test == "python -m pytest -q"


def test_readme_install_brings_what_its_test_command_needs() -> None:
    install, _, test = _first_block()
    target = shlex.split(install)[-1]  # '.[test]'
    extras = re.fullmatch(r"\.(?:\[([\w,]+)\])?", target)
    assert extras, target
    chosen = set((extras.group(1) or "").split(",")) - {""}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = list(project["dependencies"]) + [r for e in chosen for r in project["optional-dependencies"][e]]
    names = {re.split(r"[<>=!\[; ]", r, maxsplit=1)[0].lower() for r in installed}
    runner = shlex.split(test)[2]  # python -m pytest -> pytest
    assert runner in names, f"README's test command runs {runner}, which `{install}` does not install"


def test_ci_runs_exactly_readmes_test_command() -> None:
    _, _, test = _first_block()
    commands = [
        line.strip()
        for line in (ROOT / ".ci/run").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert commands[-1] == test
