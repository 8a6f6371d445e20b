"""What one command works on (one ablation, profile, ``key=value`` overrides and store), built once.

It is built by :func:`select` and handed down: its runs, their ids and its hints are derived in one place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import hints
from harness.errors import AblateError
from harness.experiment import grid
from harness.experiment.ablation import Ablation
from harness.experiment.declaration import Profile
from harness.experiment.grid import RunSpec


@dataclass(frozen=True)
class Selection:
    """One ablation x profile x overrides, resolved: ``ablation`` as the profile runs it, ``specs`` its validated runs.

    ``typed`` (the ablation as the user named it), ``results`` and ``storage``: for hints.
    """

    ablation: Ablation
    profile: str
    overrides: tuple[str, ...]
    specs: tuple[RunSpec, ...]
    typed: str = ""
    results: Path = hints.DEFAULT_RESULTS
    storage: str | None = None

    @property
    def name(self) -> str:
        """The ablation's name."""
        return self.ablation.name

    @property
    def settings(self) -> Profile:
        """The declaration of the profile (its seeds, overrides, ...)."""
        return self.ablation.profiles[self.profile]

    @property
    def run_ids(self) -> frozenset[str]:
        """The run ids of :attr:`specs`."""
        return frozenset(s.run_id for s in self.specs)

    def command(self, verb: str, *options: str, profile: str | None = None, storage: bool = False) -> str:
        """The ``ablate VERB`` command line for this selection as the user named it (:func:`harness.hints.command`).

        Args:
            verb: the command: ``run``, ``report``, ...
            options: more options, as given.
            profile: another profile to name (default: this one).
            storage: whether to pass ``--storage`` too (its password masked).
        """
        return hints.command(
            verb,
            self.typed or self.name,
            profile or self.profile,
            *options,
            results=self.results,
            overrides=self.overrides,
            storage=self.storage if storage else None,
        )

    def tuned_run_ids(self, runs: Iterable[tuple[str, str, int, dict[str, Any] | None]]) -> frozenset[str]:
        """The ids the tuned runs ``(task, variant label, seed, tuned params)`` have as runs of this selection.

        At those parameters: which records of ``<profile>+tuned`` belong to it.
        """
        specs = {(s.task, s.variant_label, s.seed): s for s in self.specs}
        out = set()
        for task, variant, seed, params in runs:
            if (spec := specs.get((task, variant, seed))) is not None and params:
                with contextlib.suppress(AblateError):  # parameters that do not validate: no id
                    out.add(spec.tuned(params, spec.profile).run_id)
        return frozenset(out)


def select(
    abl: Ablation,
    profile: str | None,
    overrides: list[str] | tuple[str, ...] = (),
    data_dir: Path | None = None,
    check_data: bool = True,
    *,
    typed: str = "",
    results: Path = hints.DEFAULT_RESULTS,
    storage: str | None = None,
    will_run: Callable[[RunSpec], bool] | None = None,
) -> Selection:
    """The :class:`Selection` of ``abl`` under ``profile`` (None: the default one); AblateError as ``plan``."""
    name, specs = grid.plan(abl, profile, overrides, data_dir, check_data, will_run)
    return Selection(
        abl.for_profile(name), name, tuple(overrides), tuple(specs), typed or abl.name, Path(results), storage
    )
