"""The ``ablate`` command line: the typer app, with every command registered in the order ``ablate --help`` lists them.

Each command is declared (its arguments, options and help) in the module that runs it, one module per command group:
:mod:`harness.cli.inspect`, ``run``, ``compare``, ``report``, ``restore`` and ``tools``. Exit codes:
docs/bad-inputs.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperGroup

from harness.cli import compare, inspect, report, restore, run, tools

CLOSED_PIPE_EXIT = 141  # a closed output pipe (`ablate list | head -1`): 128 + SIGPIPE, as `git log | head -1`


class _Commands(TyperGroup):
    """The ``ablate`` command group: a closed stdout pipe ends a command quietly.

    A pipe closed while a command parses, runs or flushes ends it with :data:`CLOSED_PIPE_EXIT` (click exits 1), the
    rest of stdout to /dev/null.
    """

    @staticmethod
    @contextmanager
    def _quiet() -> Iterator[None]:
        try:
            yield
        except BrokenPipeError:
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor
                pass
            raise typer.Exit(CLOSED_PIPE_EXIT) from None

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with self._quiet():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with self._quiet():
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Controlled, repeated, statistically honest ablations of Transformer design choices.",
)


def _version(value: bool) -> None:
    if value:
        from harness import __version__

        typer.echo(f"ablate {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """The options of ``ablate`` itself, before a command."""


for declared in (
    *(inspect.list_cmd, inspect.show_cmd, inspect.schema_cmd, run.run_cmd, inspect.status, compare.compare),
    *(report.report, run.reproduce_cmd, compare.plan_cmd, run.tune, restore.restore_cmd, restore.sync_cmd),
    tools.check_cmd,
):  # in the order `ablate --help` lists them
    app.command(declared.__name__.removesuffix("_cmd"))(declared.guarded)

bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Benchmarks outside the run store.")
app.add_typer(bench_app, name="bench")
bench_app.command("attention")(tools.attention_cmd.guarded)
