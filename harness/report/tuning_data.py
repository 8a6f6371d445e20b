"""What a report's "Tuning" section prints of each Optuna study, kept in the report's data file
(``restored/NAME.PROFILE.tuning.json``, :mod:`harness.store.archive`, with the tuned runs), so that
``ablate report NAME --from FILE`` and a store restored from it print the same section without the
Optuna storage.

One :class:`StudySummary` per study the section lists: its trial counts, best value and
parameters, Optuna's parameter importances (or why they could not be computed) and the paths of
the figures drawn for it, relative to the report's folder. The file is plain JSON (floats as
Python writes them, so they read back equal; ``Infinity`` for an infinite value) and holds no
timestamp: the same studies give the same bytes (:func:`studies_json`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, field_validator

from harness.errors import AblateError
from harness.report.sidecar import read_sidecar

Param = bool | int | float | str | None
"""A parameter value Optuna stores: a number, a categorical choice."""


class StudyFigure(BaseModel):
    """One figure drawn for a study: its kind (``optimisation history``, ``parameter importance``)
    and its path relative to the report's folder (``figures/...png``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str
    path: str

    @field_validator("path")
    @classmethod
    def _under_figures(cls, path: str) -> str:
        # the figure is copied by this path (ablate report --from, ablate restore): never from or
        # to a place outside the report's figures/ folder
        parts = PurePosixPath(path).parts
        if len(parts) != 2 or parts[0] != "figures" or not path.endswith(".png") or "\\" in path:
            raise ValueError(f"a figure's path is figures/NAME.png, not {path!r}")
        return path


class StudySummary(BaseModel):
    """What the section prints of one (task, variant) study.

    ``objectives`` above 1: a study ablate tune did not make, listed as left out (nothing else is
    read from it). ``importances``: Optuna's parameter importances, in its order (None: not
    computed; ``importance_problem`` then says why, when Optuna said something).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    task: str
    variant: str
    name: str
    objectives: int = 1
    complete: int = 0
    pruned: int = 0
    failed: int = 0
    diverged: int = 0
    best_value: float | None = None
    best_params: dict[str, Param] | None = None
    last_reason: str | None = None
    importances: dict[str, float] | None = None
    importance_problem: str | None = None
    figures: list[StudyFigure] = []

    @property
    def finished(self) -> int:
        """The trials ``ablate tune --trials`` counts: complete, pruned and failed (``diverged`` is
        a part of ``failed``, not beside it)."""
        return self.complete + self.pruned + self.failed


class TuningData(BaseModel):
    """Every study of one ablation and profile the section lists, and the storage it names
    (password masked)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ablation: str
    profile: str
    storage: str
    studies: list[StudySummary]


RESTORED = "restored"
"""``<results>/restored/``: the studies' summaries (and their figures) ``ablate restore`` copied
from data files."""


def restored_studies_path(results: Path, ablation: str, profile: str) -> Path:
    """Where the studies' summary of ``ablation`` / ``profile`` restored from a data file lies."""
    return Path(results) / RESTORED / f"{ablation}.{profile}.tuning.json"


def check_studies(data: TuningData | None, tasks: list[str], variants: list[str], where: str) -> None:
    """Every study of ``data`` is of one of the ablation's ``tasks`` and ``variants`` (labels).

    Raises:
        AblateError: a study of another task or variant (a summary edited, or of an older declaration).
    """
    for s in data.studies if data is not None else []:
        if s.task not in tasks or s.variant not in variants:
            raise AblateError(
                f"{where}: study {s.name!r} is of task {s.task!r} / variant {s.variant!r}, which the ablation does "
                f"not have (tasks {', '.join(tasks)}; variants {', '.join(variants)}); regenerate the summary with "
                "`ablate report NAME` from the store, or delete it to leave the Tuning section out"
            )


def read_restored(results: Path, ablation: str, profile: str, out: Path) -> TuningData | None:
    """The studies' summary ``ablate restore`` copied into the store (None: none), its figures
    copied into ``out``.

    Raises:
        AblateError: an unreadable summary, or one of another ablation or profile.
    """
    path = restored_studies_path(results, ablation, profile)
    fix = f"run `ablate restore` on the data file again, or delete {path}"
    data = read_sidecar(path, TuningData, path, "studies' summary", ablation, profile, fix)
    if data is not None:
        copy_figures(data, path.parent, out)
    return data


def studies_json(data: TuningData) -> bytes:
    """The summary's file: indented JSON, no timestamp (the same studies give the same bytes)."""
    return (json.dumps(data.model_dump(mode="python"), indent=1, ensure_ascii=False) + "\n").encode()


def copy_figures(data: TuningData, source: Path, out: Path) -> list[str]:
    """Copy the studies' figures from the report folder ``source`` to ``out`` (both hold them as
    ``figures/...``), when they are different folders; nothing is drawn. Returns the figures
    found in neither (the report links them all the same)."""
    missing = []
    for fig in (f for s in data.studies for f in s.figures):
        src, dst = Path(source) / fig.path, Path(out) / fig.path
        if src.is_file() and src.resolve() != dst.resolve():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        elif not dst.is_file():
            missing.append(str(src))
    return missing
