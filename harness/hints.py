"""The commands the CLI suggests ("run `ablate run X --profile smoke` first"), built in one place.

That way each works as printed on the grid the user named (over a grid: ``Selection.command``).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from harness.redact import mask_url

DEFAULT_RESULTS = Path("results")  # the default --results-dir: a hint names another one only
DEFAULT_REPORTS = Path("reports")  # the default --out of `ablate report`: the committed reports


def command(
    verb: str,
    name: str,
    profile: str,
    *options: str,
    results: Path | str = DEFAULT_RESULTS,
    overrides: tuple[str, ...] = (),
    storage: str | None = None,
) -> str:
    """``ablate VERB NAME [overrides] --profile P [--results-dir R] [options] [--storage URL]``, shell-quoted.

    A ``storage`` password is masked (``show`` reads no store: no ``--results-dir``).
    """
    parts = ["ablate", verb, name, *overrides, "--profile", profile]
    parts += [*(results_option(results) if verb != "show" else []), *options]
    if storage is not None:
        parts += ["--storage", mask_url(storage)]
    return shlex.join(parts)


def results_option(results: Path | str) -> list[str]:
    """``["--results-dir", R]`` when ``results`` is not the CLI's default folder, else ``[]``."""
    return ["--results-dir", str(results)] if Path(results) != DEFAULT_RESULTS else []
