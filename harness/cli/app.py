"""The ``ablate`` command line: a thin typer shell over plain functions, one module per command
group (:mod:`harness.cli.inspect`, ``run``, ``compare``, ``report``, ``plan``, ``tune``, ``bench``,
``check``). The commands are declared in :mod:`harness.cli.commands` (their shared options in
:mod:`harness.cli.options`) and registered here, in the order ``ablate --help`` lists them.

Bad input (unknown names, ill-typed overrides, impossible lengths, missing data) prints one
message and exits with code 2 before any run starts. ``ablate run`` exits with 1 when some runs
failed (raised), 0 otherwise (diverged runs are outcomes, recorded and reported).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperGroup

from harness.cli.commands import inspect, results, runs, tools

CLOSED_PIPE_EXIT = 141
"""The exit status of a command whose output pipe closed (``ablate list | head -1``): 128 + SIGPIPE,
what the shell reports for ``git log | head -1`` or ``seq 1 1000000 | head -1``."""


@contextmanager
def _quiet_when_the_reader_leaves() -> Iterator[None]:
    """A closed stdout pipe ends the command quietly with :data:`CLOSED_PIPE_EXIT`: no traceback, no
    message (click's own handler exits 1). What is still buffered goes to /dev/null, so that the
    interpreter's last flush does not fail either."""
    try:
        yield
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor
            pass
        raise typer.Exit(CLOSED_PIPE_EXIT) from None


class _Commands(TyperGroup):
    """The ``ablate`` command group: every command's parsing (``--help`` prints while parsing) and
    run, its output flushed before it returns, under :func:`_quiet_when_the_reader_leaves`."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _quiet_when_the_reader_leaves():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _quiet_when_the_reader_leaves():
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # a closed pipe is found here, not at the interpreter's exit


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Controlled, repeated, statistically honest ablations of Transformer design choices.",
)


app.command("list")(inspect.list_cmd)
app.command()(inspect.show)
app.command()(inspect.schema)
app.command()(runs.run)
app.command()(inspect.status)
app.command()(results.compare)
app.command()(results.report)
app.command()(runs.reproduce)
app.command("plan")(results.plan_cmd)
app.command()(runs.tune)
app.command()(results.restore)
app.command()(results.sync)
app.command()(tools.check)

bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Benchmarks outside the run store.")
app.add_typer(bench_app, name="bench")
bench_app.command("attention")(tools.bench_attention)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
