"""Every example of README.md and docs/*.md works as written: each ``yaml`` block is an ablation file
that loads and plans (or a fragment of one that the JSON Schema accepts), and each line of a
``bash`` block is a command ablate's own argument parser accepts (nothing trains), an install of
this project's packages and extras, a test run of files that exist, or a shell step of the install.

A page marks a block that needs what a test machine lacks with an HTML comment on the line just
before it, ``<!-- needs: gpu -->`` (or ``cluster``, ``key``, ``network``); such a block is listed
as a skip saying so, and its ``ablate`` lines are still parsed.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
import tomllib
import typer

from harness.cli.app import app
from harness.experiment import schema as schema_mod
from harness.experiment.ablation import load
from harness.experiment.declaration import load_yaml
from harness.experiment.grid import plan

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS = ("gpu", "cluster", "key", "network")
REQUIRED = ("name", "question", "axes", "baseline", "tasks", "profiles")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    needs: str | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for page in PAGES:
        text = page.read_text()
        for match in re.finditer(r"^```(bash|yaml)\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            needs = re.fullmatch(r"<!-- needs: (\w+) -->", before.strip())
            if needs:
                assert needs.group(1) in NEEDS, f"{page.name}: needs: {needs.group(1)} is not one of {NEEDS}"
            line = text[: match.start()].count("\n") + 1
            name = str(page.relative_to(ROOT))
            out.append(Block(name, line, match.group(1), match.group(2), needs.group(1) if needs else None))
    return out


BLOCKS = _blocks()
YAML = [b for b in BLOCKS if b.lang == "yaml"]
BASH = [b for b in BLOCKS if b.lang == "bash"]


def _commands(block: Block) -> list[str]:
    """The block's commands: its lines without comments, each ``&&`` part on its own."""
    lines = [line.split(" #", 1)[0].strip() for line in block.text.splitlines()]
    return [part.strip() for line in lines if line and not line.startswith("#") for part in line.split("&&")]


def test_the_pages_have_examples() -> None:
    assert len(YAML) >= 4 and len(BASH) >= 5, (len(YAML), len(BASH))


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.needs], ids=str)
def test_blocks_a_page_marks_as_needing_more_are_listed(block: Block) -> None:
    pytest.skip(f"{block} needs: {block.needs} (its ablate lines are parsed by test_every_bash_line_works)")


# --- yaml -------------------------------------------------------------------------------------------


def _fragment_schema(plugins: bool) -> dict:
    """The shipped schema of a whole file, with no key required: what a fragment of one must meet."""
    shipped = json.loads(schema_mod.SHIPPED.read_text())
    root = copy.deepcopy(shipped["$defs"]["Ablation_plugins" if plugins else "Ablation"])
    root.pop("required", None)
    return {"$schema": shipped["$schema"], "$defs": shipped["$defs"], **root}


@pytest.mark.parametrize("block", YAML, ids=str)
def test_every_yaml_block_is_an_ablation_file_or_a_fragment_of_one(block: Block, tmp_path: Path) -> None:
    data = load_yaml(block.text)
    assert isinstance(data, dict), f"{block}: not a mapping"
    if all(key in data for key in REQUIRED):  # a whole file: loaded and planned as `ablate show` does
        path = tmp_path / f"{data['name']}.yaml"
        path.write_text(block.text)
        abl = load(str(path))
        for profile in abl.profiles:
            assert plan(abl, profile, check_data=False)[1], (block, profile)
        return
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(_fragment_schema(plugins="plugins" in data))
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors, f"{block}: {errors}"


# --- bash -------------------------------------------------------------------------------------------


def _parse_ablate(args: list[str]) -> None:
    """``ablate ARGS`` through the CLI's own parser (click), without running the command."""
    group = typer.main.get_command(app)
    ctx = group.make_context("ablate", list(args), resilient_parsing=False)
    name, sub, rest = group.resolve_command(ctx, _rest(ctx))
    while hasattr(sub, "resolve_command"):  # a group: `ablate bench attention`
        parent = sub.make_context(name, rest, parent=ctx)
        name, sub, rest = sub.resolve_command(parent, _rest(parent))
    sub.make_context(name, rest, parent=ctx)


def _rest(ctx: click.Context) -> list[str]:
    """A group's arguments left after its own options: the command name and its arguments."""
    protected = getattr(ctx, "_protected_args", None)
    return [*(protected if protected is not None else ctx.protected_args), *ctx.args]


def _pip(args: list[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if args[:2] == ["install", "-e"]:
        target = args[2]
        folder, _, extras = target.partition("[")
        assert (ROOT / folder / "pyproject.toml").is_file(), f"pip install -e {target}: no project in {folder}"
        for extra in filter(None, extras.rstrip("]").split(",")):
            assert extra in project["optional-dependencies"], f"no extra {extra!r} in pyproject.toml"
        return
    raise AssertionError(f"pip {' '.join(args)}: not an install of this project (mark the block needs: network)")


def _check_command(command: str, marked: bool) -> None:
    argv = shlex.split(command)
    head, args = argv[0], argv[1:]
    if head == "ablate":
        try:
            _parse_ablate(args)
        except Exception as err:  # click's usage errors (typer ships its own click: matched by their method)
            if not hasattr(err, "format_message"):
                raise
            raise AssertionError(f"`{command}`: {err.format_message()}") from None
    elif marked:
        return  # a step that needs what the block's mark says
    elif head == "pip":
        _pip(args)
    elif argv[:3] == ["python", "-m", "pytest"]:
        for arg in (a for a in args[2:] if not a.startswith("-")):
            assert (ROOT / arg.split("::")[0]).exists(), f"`{command}`: no {arg}"
    elif head == "python" and args and args[0].endswith(".py"):
        assert (ROOT / args[0]).is_file(), f"`{command}`: no {args[0]}"
    elif head in ("cd", ".") or argv[:3] == ["python3", "-m", "venv"]:
        return  # the shell steps of the install
    else:
        raise AssertionError(f"`{command}`: not a command this test knows; mark the block if it needs more")


@pytest.mark.parametrize("block", BASH, ids=str)
def test_every_bash_line_works(block: Block) -> None:
    commands = _commands(block)
    assert commands, f"{block}: an empty block"
    for command in commands:
        _check_command(command, marked=block.needs is not None)


def test_an_option_that_does_not_exist_is_caught() -> None:
    """The parser check can fail: a misspelt option or command is an error, not a pass."""
    with pytest.raises(AssertionError, match="--profil"):
        _check_command("ablate run pe_extrapolation --profil smoke", marked=False)
    with pytest.raises(AssertionError, match="rn"):
        _check_command("ablate rn pe_extrapolation", marked=False)
    with pytest.raises(AssertionError, match="no extra"):
        _check_command('pip install -e ".[tests]"', marked=False)
