"""What one command works on: one ablation, one profile, the command line's ``key=value``
overrides, and where its runs are. Built once per command by :func:`select` and handed down, so
that the profile's subset of the grid, the run ids it expects and the commands a hint suggests
(:mod:`harness.hints`) are derived in one place."""

from __future__ import annotations

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
    """One ablation x profile x overrides, resolved (frozen: its fields cannot be reassigned).

    Attributes:
        ablation: the declaration as the profile runs it (:meth:`Ablation.for_profile`: only the
            profile's ``only_tasks`` and ``only_variants``); its ``variants()`` are the subset.
        profile: the profile's name (the declaration's ``default_profile`` when none was named).
        overrides: the ``key=value`` run overrides, in command-line order.
        specs: every run of the subset, validated (:func:`harness.experiment.grid.plan`), in
            seed, task, variant order.
        typed: the ablation as the user named it (a registered name or a YAML path), for hints;
            :func:`select` makes it the name when none is given.
        results: ``--results-dir``, for hints.
        storage: ``--storage`` (Optuna), if given; only ``run --tuned``, ``tune`` and ``report`` take it.
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

    def command(self, verb: str, *options: str, profile: str | None = None, storage: bool = False) -> str:
        """The ``ablate VERB`` command over this grid (:func:`harness.hints.command`), at ``profile``
        when given; ``storage``: with ``--storage`` when one was given."""
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
    """The :class:`Selection` of ``abl`` under ``profile`` (None: the default profile) with the
        run ``overrides``. ``check_data=False`` (read-only commands) skips finding or downloading
        data files: run ids depend only on configs. ``typed``, ``results``, ``storage``: what the
        command was given, for the commands its hints suggest (:attr:`Selection.typed`); ``stored``: as
    :func:`harness.experiment.grid.plan` takes it.

        Raises:
            AblateError: an unknown profile, a bad override (one naming an axis, an unknown key, a bad
                value) or a grid point that fails the pre-run checks, as
                :func:`harness.experiment.grid.plan` does.
    """
    name, specs = grid.plan(abl, profile, overrides, data_dir, check_data, will_run)
    return Selection(
        abl.for_profile(name), name, tuple(overrides), tuple(specs), typed or abl.name, Path(results), storage
    )
