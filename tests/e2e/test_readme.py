"""README, the front door: its first commands work in order on a fresh install, `.ci/run` runs its
test command, it stays short, its output excerpt is what `ablate run` prints, and its example
ablation file is valid.

The full check (a fresh venv, README's install command, the main job, the test command) is done by
hand before a release; these tests pin the facts it rests on, so that an edit cannot break them
silently: the test command needs pytest, which README's install command must install.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from harness.experiment.ablation import load
from harness.experiment.grid import plan

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()

# a front door read in minutes (nanoGPT's README is about 14 KB); the details live in docs/
MAX_LINES, MAX_WORDS, MAX_LINE_LENGTH = 150, 1500, 200
# columns of the comparison table that the excerpt must show and `ablate run` must print
KEY_COLUMNS = {"variant", "n", "verdict"}


def _first_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block, "README has no ```bash block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.split("#", 1)[0].strip()]


SETUP = (
    r"git clone \S+ ablate && cd ablate",
    r"python3 -m venv \.venv && \. \.venv/bin/activate",
    r"pip install torch .*",
)
"""What a fresh machine needs before the install command: the clone, a venv, torch (its CPU build)."""


def test_readme_block_is_setup_install_main_job_test() -> None:
    *setup, install, main, test = _first_block()
    assert [next((i for i, p in enumerate(SETUP) if re.fullmatch(p, line)), None) for line in setup] == [0, 1, 2]
    assert "--index-url https://download.pytorch.org/whl/cpu" in setup[2]  # before the install, not after
    assert install.startswith("pip install -e ")
    assert main == "ablate run pe_extrapolation"
    assert test == "python -m pytest -q"


def test_readme_install_brings_what_its_test_command_needs() -> None:
    *_, install, _, test = _first_block()
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
    """Twice, last: as a newcomer has it (no ABLATE_DATA_DIR, an empty cache), then with the corpus in a cache."""
    *_, test = _first_block()
    script = (ROOT / ".ci/run").read_text().replace("\\\n", " ")  # continued lines as one
    commands = [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]
    newcomer, with_corpus = [c for c in commands if c.endswith(test)][-2:]
    assert commands[-1] == with_corpus
    for command in (newcomer, with_corpus):
        assert command.startswith("env -u ABLATE_DATA_DIR -u ABLATE_CACHE_DIR XDG_CACHE_HOME="), command
        assert " ".join(command.split()).endswith(f" {test}"), command


def test_readme_is_short() -> None:
    lines = README.splitlines()
    assert len(lines) <= MAX_LINES, f"README has {len(lines)} lines; move details to docs/"
    assert len(README.split()) <= MAX_WORDS, f"README has {len(README.split())} words; move details to docs/"
    long = [(i, len(line)) for i, line in enumerate(lines, 1) if len(line) > MAX_LINE_LENGTH]
    assert not long, f"README lines over {MAX_LINE_LENGTH} characters (line, length): {long}"


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.DOTALL | re.MULTILINE)
    assert match, f"README has no section '## {title}'"
    return match.group(1)


def _columns(header: str) -> list[str]:
    return [c.strip() for c in header.strip().strip("|").split("|")]


@pytest.fixture(scope="module")
def smoke_output(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> str:
    """What `ablate run pe_extrapolation --profile smoke` prints on a fresh store, piped (as README shows it)."""
    cwd = tmp_path_factory.mktemp("newcomer")  # the store is `results`, in the working directory
    env = {**os.environ, "ABLATE_DATA_DIR": str(data_dir), "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "harness.cli", "run", "pe_extrapolation", "--profile", "smoke"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_readme_output_excerpt_is_what_the_main_job_prints(smoke_output: str) -> None:
    excerpt = re.search(r"```text\n(.*?)```", _section("What the main job prints"), re.DOTALL)
    assert excerpt, "README's 'What the main job prints' has no ```text block"
    lines = excerpt.group(1).splitlines()
    printed = smoke_output.splitlines()
    # the grid's first line (wrapped in README at a space) and the first finished run's line, as printed
    first = " ".join(line.strip() for line in lines[:2])
    assert printed[0].split(" (")[0] == first.split(" (")[0], (printed[0], first)
    assert re.sub(r"\(\d+s; ETA [^)]*\)", "", lines[2]) in re.sub(r"\(\d+s; ETA [^)]*\)", "", smoke_output)
    # the table: its title's task and metric, its key columns, its rows' variants
    title = next(line for line in lines if line.startswith("**"))
    task, metric = title.strip("*").split(" · ")[:2]
    table_at = next(i for i, line in enumerate(printed) if line.startswith("**") and f"{task} · {metric}" in line)
    printed_header = next(line for line in printed[table_at:] if line.startswith("| variant"))
    header = next(line for line in lines if line.startswith("| variant"))
    assert set(_columns(header)) >= KEY_COLUMNS, f"README's excerpt lacks columns {KEY_COLUMNS - set(_columns(header))}"
    assert set(_columns(printed_header)) >= KEY_COLUMNS, printed_header
    rows = [_columns(line)[0] for line in lines if line.startswith("| ") and line != header]
    printed_rows = [_columns(line)[0] for line in printed[table_at:] if line.startswith("| ")]
    assert rows and set(rows) <= set(printed_rows), (rows, printed_rows)
    # the closing lines (wrapped in README at spaces), as printed
    closing = " ".join(
        line.strip() for line in lines[lines.index(next(x for x in lines if x.startswith("smoke is"))) :]
    )
    assert " ".join(closing.split()) in " ".join(smoke_output.split()), closing


def test_readme_example_ablation_file_is_valid(tmp_path: Path) -> None:
    """README's own ablation file loads through the project's loader, and every profile's grid passes
    the checks made before any run (the commands beside it run it as it is)."""
    section = _section("Your own question")
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block, "README's 'Your own question' has no ```yaml block"
    name = re.search(r"^name: (\w+)$", block.group(1), re.MULTILINE).group(1)
    path = tmp_path / f"{name}.yaml"
    path.write_text(block.group(1))
    abl = load(str(path))
    for profile in abl.profiles:
        _, specs = plan(abl, profile, check_data=False)
        assert specs, profile
    commands = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    assert f"ablate run {name}.yaml --profile smoke" in commands
