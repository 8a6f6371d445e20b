"""The ``ablate`` command line: a thin typer shell (:mod:`harness.cli.app`) over plain functions.

Tests call those functions directly (one module per command group).
"""


def main() -> None:
    """The ``ablate`` console script (``harness.cli:main``): the typer app.

    The app is imported only when the command line starts, so that importing a command module does not import typer.
    """
    from harness.cli.app import app

    app()
