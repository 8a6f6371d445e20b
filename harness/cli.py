"""The ``ablate`` command line: a thin shell over plain functions in :mod:`harness.commands`.

Bad input (unknown names, ill-typed overrides, impossible lengths, missing data) prints one
message and exits with code 2 before any run starts. ``ablate run`` exits with 1 when some runs
failed (raised), 0 otherwise (diverged runs are outcomes, recorded and reported).
"""
from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Controlled, repeated, statistically honest ablations of Transformer design choices.")

ProfileOpt = Annotated[Optional[str], typer.Option("--profile", "-p", help="smoke | cpu | gpu (default: the ablation's default, cpu)")]
ResultsOpt = Annotated[Path, typer.Option("--results-dir", help="run store")]


class WandbMode(str, Enum):
    auto = "auto"
    off = "off"
    offline = "offline"
    online = "online"


class Format(str, Enum):
    table = "table"
    md = "md"
    csv = "csv"
    json = "json"


def _guard(fn, *args, **kwargs):
    from harness.errors import AblateError

    try:
        return fn(*args, **kwargs)
    except AblateError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command("list")
def list_cmd() -> None:
    """Registered ablations and tasks, one line each."""
    from harness import commands

    _guard(commands.list_all)


@app.command()
def show(name: Annotated[str, typer.Argument(help="ablation name or YAML path")], profile: ProfileOpt = None,
         overrides: Annotated[Optional[list[str]], typer.Argument(help="key=value config overrides")] = None) -> None:
    """An ablation's question, claims, axes, profiles and its expanded grid (nothing runs)."""
    from harness import commands

    _guard(commands.show, name, profile, overrides or [])


@app.command()
def run(
    name: Annotated[str, typer.Argument(help="ablation name or YAML path")],
    overrides: Annotated[Optional[list[str]], typer.Argument(help="key=value config overrides, e.g. model.d_model=128")] = None,
    profile: ProfileOpt = None,
    results_dir: ResultsOpt = Path("results"),
    workers: Annotated[Optional[int], typer.Option(min=1, help="runs at once (default: CPU cores, at most the runs to do)")] = None,
    threads: Annotated[int, typer.Option(min=1, help="torch threads per run")] = 1,
    wandb: Annotated[WandbMode, typer.Option(help="auto: online when WANDB_API_KEY is set, else offline")] = WandbMode.auto,
) -> None:
    """Train every run of the grid not yet in the store, then print the comparison table."""
    from harness import commands

    code = _guard(commands.run, name, profile, overrides or [], results_dir, workers=workers or None,
                  threads=threads, wandb=_wandb_mode(wandb))
    raise typer.Exit(code)


@app.command()
def status(name: str, profile: ProfileOpt = None, results_dir: ResultsOpt = Path("results")) -> None:
    """Done / failed / diverged / pending, per variant and task."""
    from harness import commands

    _guard(commands.status, name, profile, results_dir)


@app.command()
def compare(name: str, profile: ProfileOpt = None, results_dir: ResultsOpt = Path("results"),
            metric: Annotated[Optional[str], typer.Option(help="one metric (default: every primary)")] = None,
            fmt: Annotated[Format, typer.Option("--format")] = Format.table) -> None:
    """The statistical comparison table, from the store."""
    from harness import commands

    _guard(commands.compare, name, profile, results_dir, metric=metric, fmt=fmt.value)


@app.command()
def report(name: str, profile: ProfileOpt = None, results_dir: ResultsOpt = Path("results"),
           out: Annotated[Path, typer.Option(help="folder for the markdown and figures")] = Path("reports")) -> None:
    """Write reports/NAME.md (NAME.PROFILE.md for a non-default profile) and its PNG figures."""
    from harness import commands

    _guard(commands.report, name, profile, results_dir, out)


def _wandb_mode(mode: WandbMode) -> str:
    if mode is WandbMode.auto:
        return "online" if os.environ.get("WANDB_API_KEY") else "offline"
    return mode.value


def main() -> None:
    app()


if __name__ == "__main__":
    main()
