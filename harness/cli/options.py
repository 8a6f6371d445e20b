"""The options and arguments several commands declare, and :func:`guard`, which runs a command."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, ParamSpec, TypeVar

import typer

from harness.bounds import INT_MAX

P = ParamSpec("P")
R = TypeVar("R")


def given(flag: str, fix: str, convert: Callable[[str], Any] = Path) -> Callable[[Any], Any]:
    """The parser of a path option ``flag``.

    An empty or blank value (an unset shell variable) is refused with ``fix``, never read as ``Path("")``, the current
    folder; so is an unreadable path.
    """

    def parse(value: Any) -> Any:
        if not isinstance(value, str):  # the option's default
            return value
        problem = None
        if not value.strip():
            why = f" (only blanks: {value!r})" if value else " (it would mean the current folder)"
            problem = f"{flag} is empty{why if convert is Path else ''}; {fix}"
        elif convert is Path and os.path.exists(value) and not os.access(value, os.R_OK):  # click.Path(readable=True)
            problem = f"{flag} {value} is not readable (permission denied); fix its permissions or pass a readable copy"
        if problem:
            typer.echo(f"error: {problem}", err=True)
            raise typer.Exit(2)
        return convert(value)

    return parse


ProfileOpt = Annotated[
    Optional[str],
    typer.Option(
        "--profile",
        "-p",
        help="smoke | cpu | confirm | gpu, or another the ablation declares (default: the ablation's default_profile)",
    ),
]
ResultsOpt = Annotated[
    Path,
    typer.Option(
        "--results-dir",
        parser=given("--results-dir", "pass the run store's folder, or leave the option out for results"),
        help="run store",
    ),
]
NameArg = Annotated[str, typer.Argument(help="ablation name or YAML path")]
OverridesArg = Annotated[Optional[list[str]], typer.Argument(help="key=value config overrides, e.g. model.d_model=128")]
MadeWithArg = Annotated[Optional[list[str]], typer.Argument(help="the key=value overrides the runs were made with")]
WorkersOpt = Annotated[
    Optional[int],
    typer.Option(
        min=1,
        max=INT_MAX,
        help=(
            "runs at once (default: one per GPU slot; on CPU, cores / --threads, at most the runs to do, or "
            "1 when the grid's estimated time is too short to pay for a process pool, e.g. a smoke grid)"
        ),
    ),
]
ThreadsOpt = Annotated[int, typer.Option(min=1, max=INT_MAX, help="torch threads per run")]
RunTimeoutOpt = Annotated[
    Optional[float], typer.Option(help="seconds; a run over it is stopped and recorded as timeout")
]
FromOpt = Annotated[
    Path | None,
    typer.Option(
        "--from",
        parser=given("--from", "pass a report's data file, e.g. --from reports/data/NAME.tar.gz"),
        help="a report's data file (reports/data/NAME.PROFILE.tar.gz) read instead of the store",
    ),
]
PluginOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--plugin",
        help=(
            "a plugin to load first: an importable module or a .py file (repeatable); installed plugins "
            "(entry points in ablate.plugins) load by themselves"
        ),
    ),
]
StorageOpt = Annotated[
    Optional[str],
    typer.Option(
        parser=given(
            "--storage",
            "pass a database URL (e.g. sqlite:///results/optuna.db) or leave it out for RESULTS/optuna.db",
            str,
        ),
        help=(
            "Optuna storage URL (default sqlite:///RESULTS/optuna.db; postgresql+psycopg2://user:pw@host/db "
            "for many workers)"
        ),
    ),
]


WandbMode = Literal["auto", "off", "offline", "online"]
WANDB_AUTO = "auto: online when W&B credentials are set (WANDB_API_KEY or `wandb login`), else offline"
WandbOpt = Annotated[WandbMode, typer.Option(help=WANDB_AUTO)]
Format = Literal["table", "md", "csv", "json"]
FormatOpt = Annotated[Format, typer.Option("--format")]


def guard(on_interrupt: str = "interrupted") -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Give a command its ``guarded`` form, which ``ablate`` runs; the command itself is returned unchanged.

    The decorator of every command's declaration. The guarded form exits with the int the command returns; bad input
    exits 2 with one line, Ctrl-C 130 with ``on_interrupt``: its errors never reach the user as a traceback. A command
    with a ``plugin`` option loads those plugins (``--plugin``), with the installed ones, first. Python callers (tests)
    call the command itself, which raises.
    """

    def decorate(command: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(command)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
            from harness.errors import AblateError
            from harness.experiment import plugins

            try:
                if "plugin" in kwargs:
                    plugins.load_for_command(kwargs["plugin"] or [])
                result = command(*args, **kwargs)
            except AblateError as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(2) from None
            except KeyboardInterrupt as exc:  # Ctrl-C: 130; SIGTERM to a pooled run (Terminated): 143
                typer.echo(on_interrupt, err=True)
                raise typer.Exit(getattr(exc, "exit_code", 130)) from None
            if isinstance(result, int):  # the exit status of a command that has one (other results: 0)
                raise typer.Exit(result)

        command.guarded = guarded  # type: ignore[attr-defined]
        return command

    return decorate


def wandb_mode(mode: WandbMode, logs: bool = True, offline: bool = True) -> str:
    """The mode ``--wandb`` gives, ``auto`` resolved.

    ``auto`` is ``off`` for a command that logs no W&B run (``logs`` False), else online when W&B would find
    credentials, else offline (``offline`` False: off, for a command that reads the store and must write nothing into
    it unless asked: ``ablate report``).
    """
    if mode != "auto":
        return mode
    if not logs:
        return "off"
    from harness.credentials import has_wandb_credentials

    return "online" if has_wandb_credentials() else "offline" if offline else "off"
