"""The commands the CLI suggests ("run `ablate run X --profile smoke` first"), built in one place
from the context of the command that prints them, so that each works as printed and reads the
grid the user was looking at: the ablation as they named it (a registered name or a YAML path),
the resolved profile, the key=value overrides, ``--results-dir`` and the Optuna ``--storage``.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

from harness.redact import mask_url

DEFAULT_RESULTS = Path("results")
"""The CLI's default ``--results-dir``; a hint names the folder only when it differs."""

DEFAULT_REPORTS = Path("reports")
"""The default ``--out`` of ``ablate report``: where the committed reports and their data files are."""

GRID_VERBS = ("run", "status", "compare", "report", "plan", "tune", "show")
"""Commands that take an ablation, ``--profile`` and the grid's key=value overrides."""


@dataclasses.dataclass(frozen=True)
class Context:
    """What a command was given that selects a grid and where its runs are.

    Attributes:
        name: the ablation as typed (a registered name or a path to its YAML file).
        profile: the resolved profile name (never ``None``: a hint names it).
        results: ``--results-dir``.
        overrides: the key=value overrides, in the order given.
        storage: ``--storage`` (Optuna), if given; only ``run --tuned``, ``tune`` and ``report`` take it.
    """

    name: str
    profile: str
    results: Path = DEFAULT_RESULTS
    overrides: tuple[str, ...] = ()
    storage: str | None = None

    def command(self, verb: str, *options: str, profile: str | None = None, storage: bool = False) -> str:
        """``ablate VERB NAME [overrides] --profile P [--results-dir R] [options] [--storage URL]``,
        shell-quoted. ``storage``: add ``--storage`` when one was given (a URL with a password is
        shown masked: the user must put theirs back)."""
        if verb not in GRID_VERBS:
            raise ValueError(f"{verb!r} is not a command over a grid; one of {GRID_VERBS}")
        parts = ["ablate", verb, self.name, *self.overrides, "--profile", profile or self.profile]
        if verb != "show":
            parts += results_option(self.results)
        parts += options
        if storage and self.storage is not None:
            parts += ["--storage", mask_url(self.storage)]
        return shlex.join(parts)


def results_option(results: Path | str) -> list[str]:
    """``["--results-dir", R]`` when ``results`` is not the CLI's default folder, else ``[]``: for
    the hints of commands that read a store but no grid (``ablate reproduce``, ``report --all``)."""
    return ["--results-dir", str(results)] if Path(results) != DEFAULT_RESULTS else []
