"""What one command works on: one ablation, one profile, the command line's ``key=value``
overrides. Built once per command by :func:`select` and handed down, so that the profile's subset
of the grid and the run ids it expects are derived in one place."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import AblateError
from harness.experiment import grid
from harness.experiment.ablation import Ablation
from harness.experiment.declaration import Profile
from harness.experiment.grid import RunSpec


@dataclass(frozen=True)
class Selection:
    """One ablation x profile x overrides, resolved (frozen: its fields cannot be reassigned).

    Attributes:
        ablation: the declaration as the profile runs it (:meth:`Ablation.for_profile`: only the
            profile's ``only_tasks`` and ``only_variants``); its ``variants()`` are the subset.
        profile: the profile's name (the declaration's ``default_profile`` when none was named).
        overrides: the ``key=value`` run overrides, in command-line order.
        specs: every run of the subset, validated (:func:`harness.experiment.grid.plan`), in
            seed, task, variant order.
    """

    ablation: Ablation
    profile: str
    overrides: tuple[str, ...]
    specs: tuple[RunSpec, ...]

    @property
    def name(self) -> str:
        """The ablation's name (its folder in the store)."""
        return self.ablation.name

    @property
    def settings(self) -> Profile:
        """The profile's declaration (seeds, overrides, subsets)."""
        return self.ablation.profiles[self.profile]

    @property
    def run_ids(self) -> frozenset[str]:
        """The run ids of :attr:`specs`: which stored runs belong to this selection."""
        return frozenset(s.run_id for s in self.specs)

    def tuned_run_ids(self, runs: Iterable[tuple[str, str, int, dict[str, Any] | None]]) -> frozenset[str]:
        """The ids the tuned runs ``(task, variant label, seed, tuned params)`` have when they are
        runs of this selection at those parameters (``ablate run --tuned`` with these overrides):
        which records of the ``<profile>+tuned`` folder belong to it. A run without parameters, of
        a point not in the selection, or whose parameters do not validate has none."""
        specs = {(s.task, s.variant_label, s.seed): s for s in self.specs}
        out = set()
        for task, variant, seed, params in runs:
            spec = specs.get((task, variant, seed))
            if spec is None or not params:
                continue
            try:
                out.add(spec.tuned(params, spec.profile).run_id)
            except AblateError:
                continue
        return frozenset(out)

    def folder(self, results: Path) -> Path:
        """The store folder of the selection's runs under the results directory ``results``."""
        return Path(results) / self.name / self.profile


def select(
    abl: Ablation,
    profile: str | None,
    overrides: list[str] | tuple[str, ...] = (),
    data_dir: Path | None = None,
    check_data: bool = True,
) -> Selection:
    """The :class:`Selection` of ``abl`` under ``profile`` (None: the default profile) with the
    run ``overrides``. ``check_data=False`` (read-only commands) skips finding or downloading
    data files: run ids depend only on configs.

    Raises:
        AblateError: an unknown profile, a bad override (one naming an axis, an unknown key, a bad
            value) or a grid point that fails the pre-run checks, as
            :func:`harness.experiment.grid.plan` does.
    """
    name, specs = grid.plan(abl, profile, overrides, data_dir, check_data)
    return Selection(abl.for_profile(name), name, tuple(overrides), tuple(specs))
